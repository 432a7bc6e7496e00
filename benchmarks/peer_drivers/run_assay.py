"""assay's ``SemanticSimilarity`` judge, driven like the peers, for the comparison table.

Runs with the project's own Python. The judge model is ``openai:gpt-4o-mini`` so that, like
the peers, it reaches the mock server through OPENAI_BASE_URL. The engine bounds concurrency
itself (``EngineConfig.concurrency``, 32 by default), so every judgement is gathered at once;
the response cache is off so that every judgement is a call, as it is for the peers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from importlib.metadata import version

from _driver import MODEL, Triple, parse_args, run

from assay.judges.base import EvalContext
from assay.judges.llm.semantic_similarity import SemanticSimilarity
from assay.llm import EngineConfig, JudgeEngine
from assay.types.case import Case
from assay.types.execution import Execution


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    default = EngineConfig.model_fields["concurrency"].default
    concurrency = args.concurrency if args.concurrency > 0 else default
    model = f"openai:{MODEL}"
    judge = SemanticSimilarity()
    state: dict[str, EvalContext] = {}

    async def setup() -> None:
        engine = JudgeEngine(EngineConfig(default_model=model, concurrency=concurrency,
                                          cache_mode="off"))
        state["ctx"] = EvalContext(engine, judge_model=model)

    async def batch(items: Sequence[Triple]) -> int:
        ctx = state["ctx"]
        pairs = [(Case(id=f"c{i}", input=q, expected_output=e), Execution(output=a))
                 for i, (q, e, a) in enumerate(items)]
        scores = await asyncio.gather(*(judge.evaluate(c, x, ctx) for c, x in pairs))
        return sum(1 for s in scores if s.value is None)

    async def teardown() -> None:
        await state["ctx"].engine.aclose()

    mode = "default evaluate() + engine" if args.concurrency <= 0 else "engine concurrency=C"
    run("assay", version("assay"), mode, concurrency, args, async_batch=batch,
        setup=setup, teardown=teardown)


if __name__ == "__main__":
    main()
