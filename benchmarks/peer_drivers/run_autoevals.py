"""autoevals' ``Factuality`` judge (a forced tool call per judgement) on the benchmark workload.

autoevals has no runner of its own (concurrency lives in the hosted platform's ``Eval``), so
its default is the documented ``init(OpenAI())`` plus one ``Factuality().eval(...)`` after the
other; at a fixed concurrency it is ``eval_async`` under a semaphore with one shared
``AsyncOpenAI`` client. Run with this peer's virtualenv Python; prints one JSON line.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version

import autoevals
from _driver import MODEL, Triple, gather_limited, parse_args, run
from autoevals.llm import Factuality
from openai import AsyncOpenAI, OpenAI


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    if args.concurrency <= 0:
        autoevals.init(OpenAI())
        judge = Factuality(model=MODEL)

        def sequential(items: Sequence[Triple]) -> int:
            failed = 0
            for question, expected, actual in items:
                score = judge.eval(output=actual, expected=expected, input=question)
                failed += score.score is None
            return failed

        run("autoevals", version("autoevals"), "default: sequential eval()", 1, args,
            batch=sequential)
        return

    async_judge = Factuality(model=MODEL)

    async def setup() -> None:
        autoevals.init(AsyncOpenAI())

    async def one(item: Triple) -> bool:
        question, expected, actual = item
        score = await async_judge.eval_async(output=actual, expected=expected, input=question)
        return score.score is not None

    async def concurrent(items: Sequence[Triple]) -> int:
        return await gather_limited(items, args.concurrency, one)

    run("autoevals", version("autoevals"), "eval_async() under a semaphore", args.concurrency,
        args, async_batch=concurrent, setup=setup)


if __name__ == "__main__":
    main()
