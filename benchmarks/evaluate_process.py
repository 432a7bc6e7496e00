"""A script that calls ``assay.evaluate()``, as a whole process: the Python API's figure beside
``assay run`` and the raw loop as a process in ``suite_throughput.py``.

It evaluates the suite's cases (read from its JSONL file as rows of data) with the suite's own
agent function as the target and one ``semantic_similarity`` judge on the mock server, the
cache off and a SQLite store, and exits 1 when any judge call failed. Its wall time is taken
from outside, from spawn to exit, as for the other two.

::

    python benchmarks/evaluate_process.py DIR JUDGE_MODEL CONCURRENCY
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import assay


def main() -> int:
    directory, judge_model, concurrency = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    spec = importlib.util.spec_from_file_location("agent", directory / "agent.py")
    assert spec is not None and spec.loader is not None
    agent = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(agent)
    with (directory / "cases.jsonl").open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    result = assay.evaluate(rows, target=agent.answer, evaluators=["semantic_similarity"],
                            judge_model=judge_model, concurrency=concurrency, cache="off",
                            store=f"sqlite:///{directory / 'evaluate-runs.db'}", keep=False)
    errors = result.summary.evaluator_errors + result.summary.target_errors
    print(errors)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
