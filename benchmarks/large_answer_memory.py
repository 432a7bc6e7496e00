"""Peak memory of one case whose agent answers with a large text.

Each measurement is a fresh interpreter that runs ``assay.evaluate`` on one case: a Python
function as the target returning a string of N characters (made before the run, so it counts
in the baseline of neither side), ``exact_match`` as the evaluator and a SQLite store file.
The child reports its peak resident set size (``resource.getrusage``); the table shows it
against the same run with a one-character answer, and that difference as a multiple of the
answer's size. Every copy of the answer assay makes while it runs, checks, judges and stores
the case shows up there.

    python benchmarks/large_answer_memory.py                  # 1, 10 and 30 MB
    python benchmarks/large_answer_memory.py --sizes 30 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, resource, sys
from pathlib import Path
import assay

size, store = int(sys.argv[1]), sys.argv[2]
ANSWER = "x" * size
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

def agent(question):
    return ANSWER

result = assay.evaluate([{"id": "big", "input": "q", "expected_output": "y"}], target=agent,
                        evaluators=["exact_match"], store=store, cache="off")
assert result.summary.cases == 1 and result.summary.evaluator_errors == 0 \
    and result.summary.target_errors == 0, result.summary
assert len(result.records[0].execution.output) == size
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"before_kb": before, "peak_kb": peak}))
"""


def peak_kb(size: int) -> int:
    """The peak RSS in KB of a fresh process that evaluates one answer of ``size`` chars."""
    with tempfile.TemporaryDirectory(prefix="assay-bench-mem-") as tmp:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(size), str(Path(tmp) / "runs.db")],
            capture_output=True, text=True, check=True, cwd=tmp,
            env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin",
                 "ASSAY_CACHE_DIR": tmp})
    return int(json.loads(done.stdout.strip().splitlines()[-1])["peak_kb"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10,30", help="answer sizes in MB (10^6 chars)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per size; the median")
    args = parser.parse_args()
    base = statistics.median(peak_kb(1) for _ in range(args.repeat))
    print(f"baseline (1-char answer): peak RSS {base / 1024:.0f} MB")
    print(f"{'answer':>8} {'peak RSS':>10} {'above baseline':>15} {'x answer':>9}")
    for mb in (float(s) for s in args.sizes.split(",")):
        size = int(mb * 1_000_000)
        peak = statistics.median(peak_kb(size) for _ in range(args.repeat))
        above = (peak - base) * 1024
        print(f"{mb:>6g}MB {peak / 1024:>8.0f}MB {above / 1e6:>13.0f}MB "
              f"{above / size:>8.3f}x")


if __name__ == "__main__":
    main()
