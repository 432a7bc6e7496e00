"""openevals' ``create_llm_as_judge`` (correctness prompt, 0-1 score) on the benchmark workload.

openevals judges one example per call and leaves running many to LangSmith, so its default is
the synchronous evaluator called in a loop; at a fixed concurrency it is the evaluator from
``create_async_llm_as_judge`` under a semaphore. The judge is the documented model string
(``openai:...``), i.e. LangChain's ChatOpenAI with structured output, which reads
OPENAI_BASE_URL. Run with this peer's virtualenv Python; prints one JSON line.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib.metadata import version
from typing import Any

from _driver import MODEL, Triple, gather_limited, parse_args, run

os.environ.setdefault("LANGSMITH_TRACING", "false")

from openevals.llm import create_async_llm_as_judge, create_llm_as_judge
from openevals.prompts import CORRECTNESS_PROMPT


def _ok(result: Any) -> bool:
    score = result.get("score") if isinstance(result, dict) else None
    return isinstance(score, int | float)


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    model = f"openai:{MODEL}"
    if args.concurrency <= 0:
        judge = create_llm_as_judge(prompt=CORRECTNESS_PROMPT, model=model, continuous=True)

        def sequential(items: Sequence[Triple]) -> int:
            return sum(not _ok(judge(inputs=q, outputs=a, reference_outputs=e))
                       for q, e, a in items)

        run("openevals", version("openevals"), "default: sequential judge()", 1, args,
            batch=sequential)
        return

    async_judge = create_async_llm_as_judge(prompt=CORRECTNESS_PROMPT, model=model,
                                            continuous=True)

    async def one(item: Triple) -> bool:
        question, expected, actual = item
        return _ok(await async_judge(inputs=question, outputs=actual, reference_outputs=expected))

    async def concurrent(items: Sequence[Triple]) -> int:
        return await gather_limited(items, args.concurrency, one)

    run("openevals", version("openevals"), "async judge under a semaphore", args.concurrency,
        args, async_batch=concurrent)


if __name__ == "__main__":
    main()
