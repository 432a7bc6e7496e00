"""Peak memory of resuming a batch run to collect it, with the mock server's batch API.

A server process runs the mock server (``assay.testing.mock_server``). A first process makes
a batch run (``assay.evaluate(..., batch=True)``) of ``--cases`` cases whose agent answers
``--answer-kb`` KB each, judged by ``semantic_similarity`` through OpenAI's batch API: the
agent runs, its answers are stored and the batch is sent, and the run is left waiting. Then,
for each ``--src`` (another checkout's code, or this one's; each with a server, a run and
a store of its own), a fresh interpreter resumes it (``assay.resume(..., keep=False,
on_record=...)``, as ``assay run --resume`` does): it collects the batch (every answer from
it, none live), judges, and hands every record to ``on_record``. It reports its peak
resident set size (``resource.getrusage``) and its size before.

    python benchmarks/resume_memory.py                                  # 5,000 x 20 KB
    python benchmarks/resume_memory.py --src /tmp/old/src --src src

A measurement, not a test: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

SERVER = r"""
import sys
from assay.testing.mock_server import serve_in_thread

server = serve_in_thread()
print(server.url, flush=True)
sys.stdin.read()
"""

COMMON = r"""
import sys
cases, answer_kb, store = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rows = [{"id": f"c{i}", "input": f"what colour is thing {i}",
         "expected_output": f"the thing {i} is blue"} for i in range(cases)]
padding = "a" * (answer_kb * 1024)

def agent(question: str) -> str:
    return f"{question}: blue {padding}"
"""

MAKE = COMMON + r"""
import assay
run = assay.evaluate(rows, target=agent, evaluators=["semantic_similarity"], batch=True,
                     judge_model="openai:gpt-4o-mini", store=store, cache="off")
assert run.waiting, run
print(run.run_id)
"""

RESUME = COMMON + r"""
import json, resource, time
import assay
run_id = sys.argv[4]
seen = [0]

def on_record(record) -> None:
    seen[0] += 1

before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
done = assay.resume(run_id, store=store, data=rows, target=agent, keep=False,
                    on_record=on_record, cache="off")
print(json.dumps({"records": seen[0], "status": str(done.run.status.value),
                  "batch_calls": done.summary.usage.batch_calls,
                  "seconds": time.perf_counter() - started, "before_kb": before,
                  "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def python(code: str, src: Path, env: dict[str, str], *args: str) -> str:
    """Run ``code`` in a fresh interpreter importing ``src``; its last line of output."""
    done = subprocess.run([sys.executable, "-c", code, *args],
                          env={**env, "PYTHONPATH": str(src)}, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"{src}: {done.stderr[-2000:]}")
    return done.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5_000)
    parser.add_argument("--answer-kb", type=int, default=20)
    parser.add_argument("--src", type=Path, action="append", default=[],
                        help="the src folder of the code to measure (repeatable; default: "
                        "this checkout's)")
    args = parser.parse_args()
    print(f"a batch run of {args.cases:,} cases answered in {args.answer_kb} KB each")
    print("| code | records | before MiB | peak MiB | resume s |")
    print("|---|---:|---:|---:|---:|")
    for src in args.src or [REPO / "src"]:
        found = measure(src.resolve(), args.cases, args.answer_kb)
        print(f"| {src} | {found['records']:,} | {found['before_kb'] / 1024:,.0f} | "
              f"{found['peak_kb'] / 1024:,.0f} | {found['seconds']:.1f} |")


def measure(src: Path, cases: int, answer_kb: int) -> dict[str, Any]:
    """A batch run made and left waiting, then resumed by ``src``'s code: a mock server and a
    store of its own each time (a completed resume deletes its batches' files at the
    provider, so a second resume of the same batches would find them gone)."""
    server = subprocess.Popen([sys.executable, "-c", SERVER],
                              env={**os.environ, "PYTHONPATH": str(REPO / "src")},
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    folder = Path(tempfile.mkdtemp(prefix="assay-resume-memory-"))
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        env = {**os.environ, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-bench-0123456789"}
        store = folder / "runs.db"
        extra = (str(cases), str(answer_kb), str(store))
        run_id = python(MAKE, REPO / "src", env, *extra)
        found: dict[str, Any] = json.loads(python(RESUME, src, env, *extra, run_id))
        assert found["status"] == "completed", found
        assert found["batch_calls"] == cases, found  # answered by the batch, none live
        return found
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)

if __name__ == "__main__":
    main()
