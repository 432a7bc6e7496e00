"""Peak memory of reading a batch's results file, served by the mock server over HTTP.

A server process runs the mock server (``assay.testing.mock_server``) holding a generated
OpenAI results file: ``--lines`` answers, each a judge answer of ``--answer-kb`` KB, plus
``--padding-kb`` KB per line of a field the reader drops (0 by default: a real results line
is its answer). A fresh interpreter per measurement then reads the file as a batch run does
(``OpenAIBatches.results``, every answer kept) and reports its peak resident set size
(``resource.getrusage``) against its size before the read. ``--src`` measures another
checkout's code (its ``src``) with the same server and file.

    python benchmarks/batch_results_memory.py                            # 50,000 x 20 KB
    python benchmarks/batch_results_memory.py --src /tmp/old/src --src src
    python benchmarks/batch_results_memory.py --answer-kb 0 --padding-kb 20

A measurement, not a test: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

SERVER = r"""
import sys, time
import orjson
from assay.testing.mock_server import serve_in_thread

lines, answer_kb, padding_kb = (int(v) for v in sys.argv[1:4])
server = serve_in_thread()
content, padding = "a" * (answer_kb * 1024), "p" * (padding_kb * 1024)
server.server.batch_api.files["file-big"] = b"".join(orjson.dumps({
    "id": f"batch_req_{i}", "custom_id": f"c{i}", "padding": padding,
    "response": {"status_code": 200, "request_id": f"r{i}", "body": {
        "id": f"chatcmpl-{i}", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": f"{i} {content}"}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}},
    "error": None}) + b"\n" for i in range(lines))
print(server.url, len(server.server.batch_api.files["file-big"]), flush=True)
sys.stdin.read()
"""

READER = r"""
import asyncio, json, os, resource, sys, time
from assay.llm.batch import BatchStatus
from assay.llm.build import build_engine
from assay.types.config import RunConfig

model = "openai:gpt-4o-mini"
engine = build_engine(RunConfig(judge_model=model))
api = engine.resolve(model).batch_api()
status = BatchStatus("batch-big", "completed", True, {}, {"output_file_id": "file-big"})
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

async def read():
    try:
        return await api.results(status, 600)
    finally:
        await engine.aclose()

started = time.perf_counter()
answers = asyncio.run(read())
print(json.dumps({"answers": sum(a.response is not None for a in answers),
                  "seconds": time.perf_counter() - started, "before_kb": before,
                  "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def read(url: str, src: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src), "OPENAI_BASE_URL": url,
           "OPENAI_API_KEY": "sk-bench-0123456789"}
    done = subprocess.run([sys.executable, "-c", READER], env=env, capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{src}: {done.stderr[-2000:]}")
    found: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--answer-kb", type=int, default=20)
    parser.add_argument("--padding-kb", type=int, default=0)
    parser.add_argument("--src", type=Path, action="append", default=[],
                        help="the src folder of the code to measure (repeatable; default: "
                        "this checkout's)")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(args.lines),
                               str(args.answer_kb), str(args.padding_kb)], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url, size = server.stdout.readline().split()
        print(f"results file: {args.lines:,} lines, {int(size) / 2**20:,.0f} MiB")
        print("| code | answers | before MiB | peak MiB | read s |")
        print("|---|---:|---:|---:|---:|")
        for src in args.src or [REPO / "src"]:
            found = read(url, src.resolve())
            print(f"| {src} | {found['answers']:,} | {found['before_kb'] / 1024:,.0f} | "
                  f"{found['peak_kb'] / 1024:,.0f} | {found['seconds']:.1f} |")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
