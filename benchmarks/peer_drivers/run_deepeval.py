"""DeepEval's ``GEval`` through its own ``evaluate()`` runner on the benchmark workload.

DeepEval has a runner: ``evaluate(test_cases, metrics, async_config=AsyncConfig(...))`` runs
test cases under an asyncio semaphore of ``max_concurrent`` (20 by default). The metric is a
GEval with fixed evaluation steps, so no extra call is spent writing steps. Telemetry is off,
and the run happens in a scratch directory so DeepEval's result files land there. Run with
this peer's virtualenv Python; prints one JSON line.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from importlib.metadata import version

from _driver import MODEL, Triple, parse_args, run

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")
os.environ.setdefault("ERROR_REPORTING", "NO")
os.chdir(tempfile.mkdtemp(prefix="deepeval-bench-"))

from deepeval import evaluate  # noqa: E402
from deepeval.evaluate.configs import (  # noqa: E402
    AsyncConfig,
    CacheConfig,
    DisplayConfig,
    ErrorConfig,
)
from deepeval.metrics import GEval  # noqa: E402
from deepeval.test_case import LLMTestCase  # noqa: E402

try:  # the name of the parameter enum changed across releases
    from deepeval.test_case import SingleTurnParams as Params
except ImportError:
    from deepeval.test_case import LLMTestCaseParams as Params

DEFAULT_MAX_CONCURRENT = AsyncConfig().max_concurrent

# For a model that has logprobs, GEval asks for free text (not a JSON schema) and parses JSON
# out of it. The mock server answers free text with free text unless the prompt carries one of
# its directives, so the judge prompt (not the per-case data) carries one that fixes the answer.
ANSWER = ' <<mock:{"score": 7, "reason": "mostly the same facts"}>>'


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    concurrency = args.concurrency if args.concurrency > 0 else DEFAULT_MAX_CONCURRENT
    metric = GEval(
        name="Similarity",
        evaluation_steps=[
            "Compare the meaning of the actual output with the expected output.",
            "Penalise facts in the actual output that contradict the expected output." + ANSWER,
        ],
        evaluation_params=[Params.INPUT, Params.ACTUAL_OUTPUT, Params.EXPECTED_OUTPUT],
        model=MODEL,
        async_mode=True,
    )

    def batch(items: Sequence[Triple]) -> int:
        cases = [LLMTestCase(input=q, actual_output=a, expected_output=e) for q, e, a in items]
        result = evaluate(
            test_cases=cases, metrics=[metric],
            async_config=AsyncConfig(run_async=True, max_concurrent=concurrency),
            display_config=DisplayConfig(print_results=False, show_indicator=False,
                                         verbose_mode=False),
            cache_config=CacheConfig(write_cache=False, use_cache=False),
            error_config=ErrorConfig(ignore_errors=True))
        failed = 0
        for test in result.test_results:
            data = test.metrics_data or []
            failed += not data or any(m.score is None or m.error for m in data)
        return failed

    mode = "default evaluate()" if args.concurrency <= 0 else "evaluate(max_concurrent=C)"
    run("deepeval", version("deepeval"), mode, concurrency, args, batch=batch)


if __name__ == "__main__":
    main()
