"""The pipeline figures that ``suite_throughput.py`` does not take: the Python API, start-up
and loading a large suite.

Three sections, each printed as a table:

- ``evaluate``: ``assay.evaluate()`` on N dicts (a sync Python function as the target, one
  ``semantic_similarity`` judge, ``cache="off"``, a fresh SQLite store) against the mock server,
  then the raw aiohttp loop of ``judge_throughput.py`` at the same concurrency, latency and
  number of calls, in the same process. Wall time from the call to its return (loading,
  store and gates included). CPU twice: the whole process's (the agent's threads and the
  store's writer included), and the event loop's thread alone, which is what bounds the
  rate when the loop is the bottleneck. A third client is the floor under the target: the
  raw loop plus only what any run of a sync Python agent must add to it (the agent called
  on a thread, one row a case written to a SQLite file), with no assay code at all.
- ``startup``: the median wall time of ``python -m assay --version`` (and of ``--help``, which
  builds every command), and of bare interpreters importing the libraries a run needs (the
  floor under any whole-process figure).
- ``load``: an EVAL.yaml of N cases written to a temporary folder, then validated and loaded:
  ``assay.run.evaluate.load_data`` in this process, and ``assay validate`` as a whole command.

::

    python benchmarks/pipeline.py                         # all three, N=2000 / 10,000
    python benchmarks/pipeline.py --sections evaluate --n 2000 --concurrency 32 --latency 0
    python benchmarks/pipeline.py --sections evaluate --dict-inputs   # dict inputs, each call a copy
    python benchmarks/pipeline.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import gc
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine_line, markdown_table, mock_server
from _workload import triples
from judge_throughput import judge_body, raw_loop
from raw_process import HEADERS

SECTIONS = ("evaluate", "startup", "load")


def _answer(case_input: Any) -> str:
    """The agent: the answer is carried in the input, so each judge request is distinct."""
    return str(case_input).split(" || ", 1)[1]


def _answer_dict(request: dict[str, Any]) -> str:
    """The agent for ``--dict-inputs``: the answer is one field of a dict input (which the
    run hands to each call as a copy of its own)."""
    return str(request["answer"])


async def floor_loop(base_url: str, concurrency: int, start: int, count: int,
                     db_path: str) -> dict[str, Any]:
    """The least a run of a sync agent adds to the raw loop, written without assay.

    Per case: the agent (``_answer``) runs on a thread of a pool, as any async runner must
    run a sync function it cannot trust to be quick; the judge request is the raw loop's
    own, built before the clock starts (so the prompt costs nothing here); its answer is
    decoded and checked as the raw loop does; and one row (id, output, score) is written to
    a SQLite file in batches of 500. No records, no second row, no cache key, no gates: a
    lower bound on any runner that stores what it judged, not a design to copy. Like the
    raw loop it warms up first (threads started, connections open).
    """
    import aiohttp
    import orjson

    warm = max(2 * concurrency, 32)
    work = [(f"c{start + i}", f"{question} || {actual}", judge_body(expected, actual))
            for i, (question, expected, actual) in enumerate(triples(start, warm + count))]
    loop = asyncio.get_running_loop()
    pool = concurrent.futures.ThreadPoolExecutor(concurrency)
    db = sqlite3.connect(db_path)
    db.execute("CREATE TABLE results (case_id TEXT, output TEXT, score REAL)")
    pending: list[tuple[str, str, float]] = []
    errors = 0

    def write() -> None:
        db.executemany("INSERT INTO results VALUES (?, ?, ?)", pending)
        db.commit()
        pending.clear()

    async def worker(session: aiohttp.ClientSession, url: str, items: Any) -> None:
        nonlocal errors
        for case_id, case_input, body in items:
            output = await loop.run_in_executor(pool, _answer, case_input)
            async with session.post(url, data=orjson.dumps(body), headers=HEADERS) as resp:
                payload = await resp.read()
            score = None
            if resp.status == 200:
                message = orjson.loads(payload)["choices"][0]["message"]
                score = orjson.loads(message["content"]).get("score")
            if not isinstance(score, int | float):
                errors += 1
                continue
            pending.append((case_id, output, float(score)))
            if len(pending) >= 500:
                write()

    async def phase(session: aiohttp.ClientSession, items: list[Any]) -> None:
        shared = iter(items)
        url = f"{base_url}/chat/completions"
        await asyncio.gather(*(worker(session, url, shared) for _ in range(concurrency)))
        write()

    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            await phase(session, work[:warm])
            db.execute("DELETE FROM results")
            errors = 0
            cpu = time.process_time()
            started = time.perf_counter()
            await phase(session, work[warm:])
            seconds = time.perf_counter() - started
            cpu = time.process_time() - cpu
        stored = db.execute("SELECT count(*) FROM results").fetchone()[0]
    finally:
        db.close()
        pool.shutdown()
    return {"rate": count / seconds, "cpu_ms": cpu * 1000 / count, "errors": errors,
            "stored": stored}


def evaluate_section(n: int, concurrency: int, latency_ms: float,
                     dict_inputs: bool = False) -> list[list[Any]]:
    import assay

    rows = [{"id": f"c{i}", "expected_output": expected,
             "input": {"question": question, "answer": actual, "context": [question] * 4}
             if dict_inputs else f"{question} || {actual}"}
            for i, (question, expected, actual) in enumerate(triples(0, n))]
    agent = _answer_dict if dict_inputs else _answer
    with mock_server(latency_ms) as server, tempfile.TemporaryDirectory() as tmp:
        model = f"{server.base_url}#bench"
        warm = rows[: max(2 * concurrency, 32)]
        assay.evaluate(warm, target=agent, evaluators=["semantic_similarity"],
                       judge_model=model, concurrency=concurrency, cache="off",
                       store=f"sqlite:///{tmp}/warm.db")
        server.reset()
        started = time.perf_counter()
        cpu = time.process_time()
        loop_cpu = time.thread_time()  # the sync call runs its event loop on this thread
        result = assay.evaluate(rows, target=agent, evaluators=["semantic_similarity"],
                                judge_model=model, concurrency=concurrency, cache="off",
                                store=f"sqlite:///{tmp}/runs.db")
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu
        loop_cpu = time.thread_time() - loop_cpu
        requests = int(server.stats()["requests"])
        errors = sum(m.errors for m in result.summary.evaluators.values())
        # The raw loop does not pay for the run's records: left alive, their full
        # collection took 40-70 ms of its 0.3-0.4 s at latency 0.
        del result
        gc.collect()
        raw = asyncio.run(raw_loop(server.base_url, concurrency, n, start=n,
                                   server=server))
        floor = asyncio.run(floor_loop(server.base_url, concurrency, 2 * n, n,
                                       f"{tmp}/floor.db"))
    rate = requests / seconds
    return [["assay.evaluate()", n, concurrency, latency_ms, requests, f"{rate:.0f}",
             f"{rate / raw['rate']:.2f}", f"{cpu * 1000 / n:.2f}", f"{loop_cpu * 1000 / n:.2f}",
             errors],
            ["raw aiohttp", n, concurrency, latency_ms, raw["requests"], f"{raw['rate']:.0f}",
             "1.00", f"{raw['cpu_ms']:.2f}", "-", raw["errors"]],
            ["floor: raw + agent thread + a stored row", n, concurrency, latency_ms,
             floor["stored"] + floor["errors"], f"{floor['rate']:.0f}",
             f"{floor['rate'] / raw['rate']:.2f}", f"{floor['cpu_ms']:.2f}", "-",
             n - floor["stored"]]]


def _median_wall(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


FLOORS = (
    ("python -c pass", "pass"),
    ("python importing the libraries a run needs",
     "from pydantic import BaseModel; import sqlalchemy, typer, rich.console, yaml"),
    ("... and aiohttp (a run that calls a model)",
     "from pydantic import BaseModel; import sqlalchemy, typer, rich.console, yaml, aiohttp"),
)
"""What any command built on assay's libraries pays before its first line of its own: the
start-up a whole-process target has to fit beside the work (measured in the same run)."""


def startup_section(runs: int) -> list[list[Any]]:
    env_note = "PYTHONDONTWRITEBYTECODE" in os.environ
    rows = []
    for args in (["--version"], ["--help"]):
        wall = _median_wall([sys.executable, "-m", "assay", *args], runs)
        rows.append([f"assay {' '.join(args)}", runs, f"{wall:.3f}",
                     "byte-code off" if env_note else ""])
    for label, code in FLOORS:
        wall = _median_wall([sys.executable, "-c", code], runs)
        rows.append([label, runs, f"{wall:.3f}", "floor: no assay code"])
    return rows


def _write_suite(folder: Path, n: int) -> Path:
    lines = ["description: load benchmark", "execution:", "  evaluators:",
             "    - {name: same, type: exact_match}", "evalcases:"]
    for i, (question, expected, _) in enumerate(triples(0, n)):
        lines += [f"  - id: c{i}", f"    input: {question!r}",
                  f"    expected_output: {expected!r}"]
    path = folder / "EVAL.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def load_section(n: int, runs: int) -> list[list[Any]]:
    from assay.run.evaluate import load_data

    with tempfile.TemporaryDirectory() as tmp:
        path = _write_suite(Path(tmp), n)
        size = path.stat().st_size
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            suite = load_data(path)
            times.append(time.perf_counter() - started)
        loaded = suite.count()
        command = _median_wall([sys.executable, "-m", "assay", "validate", str(path)], runs)
    return [["load_data (in process)", n, loaded, f"{size / 1e6:.1f}",
             f"{statistics.median(times):.3f}"],
            ["assay validate (whole command)", n, loaded, f"{size / 1e6:.1f}", f"{command:.3f}"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sections", default=",".join(SECTIONS))
    parser.add_argument("--n", type=int, default=2000, help="cases for evaluate()")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.0, help="mock latency in ms")
    parser.add_argument("--load-cases", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5, help="runs for the medians")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    parser.add_argument("--dict-inputs", action="store_true",
                        help="evaluate(): dict inputs (a copy for each call) instead of text")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.load_cases, args.runs = 200, 500, 1
    sections = [s for s in args.sections.split(",") if s]
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown sections {unknown}; choose from {', '.join(SECTIONS)}")
    print(machine_line())
    if "evaluate" in sections:
        print("\n### assay.evaluate() on dicts against the raw aiohttp loop\n")
        print(markdown_table(["client", "cases", "concurrency", "latency ms", "requests",
                              "calls/s", "of raw aiohttp", "client CPU ms/case",
                              "event loop's thread CPU ms/case", "errors"],
                             evaluate_section(args.n, args.concurrency, args.latency,
                                              args.dict_inputs)))
    if "startup" in sections:
        print("\n### Start-up (median wall seconds)\n")
        print(markdown_table(["command", "runs", "seconds", "note"], startup_section(args.runs)))
    if "load" in sections:
        print("\n### Loading an EVAL.yaml (median wall seconds)\n")
        print(markdown_table(["what", "cases", "loaded", "MB", "seconds"],
                             load_section(args.load_cases, args.runs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
