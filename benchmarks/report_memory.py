"""Peak memory of ``assay report`` (the HTML and Markdown reports) of a large stored run.

A first process stores a run of ``--cases`` cases whose answers are ``--answer-kb`` KB each
(one evaluator score a case, a tenth of them failing) in a SQLite run store, as a run
would. Then, for each ``--src`` (another checkout's code, or this one's), a fresh
interpreter renders it as ``assay report RUN --html FILE --markdown FILE`` does and reports
its peak resident set size (``resource.getrusage``), its size before the report (assay
imported) and the seconds it took.

    python benchmarks/report_memory.py                                   # 20,000 x 5 KB
    python benchmarks/report_memory.py --src /tmp/old/src --src src

A measurement, not a test: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

MAKE = r"""
import sys
from assay.store.runs import RunStore
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.records import CaseRecord, EvaluatorSpec, RunSnapshot, SummaryBuilder, Verdict
from assay.types.score import Score

cases, answer_kb, url = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
padding = "a" * (answer_kb * 1024)
store = RunStore(url)
snapshot = RunSnapshot(suite_name="big", suite_hash="h", judge_models=[],
                       evaluators=[EvaluatorSpec(name="judge", type="exact_match")])
run_id = store.create_run("big", snapshot.model_dump(mode="json"), run_id="big")
builder = SummaryBuilder()
for i in range(cases):
    good = i % 10 != 0
    case_id = f"c{i:06d}"
    record = CaseRecord(run_id=run_id, case_id=case_id,
                        case=Case(id=case_id, input=f"question {i}"),
                        execution=Execution(output=f"answer {i} {padding}", latency_ms=100.0),
                        scores=[Score(name="judge", value=1.0 if good else 0.0)],
                        score=1.0 if good else 0.0, verdict=Verdict.PASS if good else Verdict.FAIL)
    store.record_execution(run_id, case_id, 0, record.execution)
    store.record_score(run_id, case_id, 0, record.scores[0])
    store.record_case(record)
    builder.add(record)
summary = builder.build()
store.flush()
store.set_status(run_id, "completed", summary.model_dump(mode="json"))
store.close()
"""

MEASURE = r"""
import json, resource, sys, time
from pathlib import Path
import assay.cli
from assay.report.html import write_html
from assay.report.markdown import render_markdown
from assay.store.runs import RunStore

url, out = sys.argv[1], Path(sys.argv[2])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
store = RunStore(url, must_exist=True)
run = store.run_record("big")
write_html(store, run, out / "report.html")
(out / "report.md").write_text(render_markdown(store, run), encoding="utf-8")
took = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"before_mb": before / 1024, "peak_mb": peak / 1024, "seconds": took,
                  "html_mb": (out / "report.html").stat().st_size / 2**20}))
"""


def _python(src: Path, script: str, *args: str) -> str:
    env = {"PYTHONPATH": str(src.resolve()), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", script, *args], env=env, text=True,
                          capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{src}: {done.stderr[-2000:]}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--answer-kb", type=int, default=5)
    parser.add_argument("--src", action="append", type=Path,
                        help="a checkout's src folder to measure (repeatable); default: this one")
    args = parser.parse_args()
    sources = args.src or [REPO / "src"]
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'runs.db'}"
        _python(sources[-1], MAKE, str(args.cases), str(args.answer_kb), url)
        print(f"{args.cases:,} cases x {args.answer_kb} KB answers")
        print(f"{'src':<40} {'before MB':>10} {'peak MB':>10} {'seconds':>8} {'html MB':>8}")
        for src in sources:
            found = json.loads(_python(src, MEASURE, url, tmp))
            print(f"{src!s:<40} {found['before_mb']:>10.0f} {found['peak_mb']:>10.0f} "
                  f"{found['seconds']:>8.1f} {found['html_mb']:>8.1f}")


if __name__ == "__main__":
    main()
