"""How close a run of the Databricks/MLflow agent judges comes to the ideal time.

The workload: N rows (default 1,000), each with a request, a response, an expected response
and C retrieved chunks (default 5), judged by ``chunk_relevance`` (one call per chunk) and four
row-level judges (``correctness``, ``groundedness``, ``safety``, ``context_sufficiency``): that
is N x (C + 4) judge calls, 9,000 by default. The judge is the mock server
(``python -m assay.testing.mock_server``, its own process, pinned to its own core on Linux) at
a fixed latency (default 100 ms); the run is ``assay.evaluate(rows, judges=..., naming=
"databricks", concurrency=K, cache="off")`` in this process, pinned to the other cores.

The ideal time is calls x latency / concurrency: what the run would take if the concurrency
limit were always full and assay cost nothing. The table shows the measured wall time of the
whole ``evaluate`` call (loading the rows, judging, storing every record, the aggregates), its
ratio to the ideal, the server's request count (which must equal the calls), the client's CPU
time per call, and the most requests the server saw in flight at once. A second row is the raw
aiohttp loop of ``judge_throughput.py`` (a semaphore, one session, orjson) making the same
number of distinct calls at the same concurrency against the same server, right after: the
least any Python client could take on this machine at that moment.

    python benchmarks/agent_judges_throughput.py                     # 1,000 rows, K=64, 100 ms
    python benchmarks/agent_judges_throughput.py --rows 200 --quick  # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from _common import MockServerProcess, core_plan, machine_line, markdown_table, pin
from judge_throughput import raw_loop

JUDGES = ["chunk_relevance", "correctness", "groundedness", "safety", "context_sufficiency"]
ROW_JUDGES = len(JUDGES) - 1


def rows(n: int, chunks: int) -> list[dict[str, Any]]:
    """Distinct rows, so no two judge requests are the same."""
    return [{"request_id": f"r{i}", "request": f"What does feature {i} do?",
             "response": f"Feature {i} stores data number {i * 7}.",
             "expected_response": f"Feature {i} stores data.",
             "retrieved_context": [{"content": f"Document {i}.{j}: feature {i} fact {j}.",
                                    "doc_uri": f"doc/{i}/{j}"} for j in range(chunks)]}
            for i in range(n)]


def measure(server: MockServerProcess, n: int, chunks: int, concurrency: int,
            latency_ms: float) -> dict[str, Any]:
    import assay

    data = rows(n, chunks)
    model = f"{server.base_url}#bench"
    # warm-up: imports, the HTTP session, the first schema builds
    assay.evaluate(rows(4, chunks), judges=JUDGES, naming="databricks", judge_model=model,
                   concurrency=concurrency, cache="off")
    server.reset()
    cpu = time.process_time()
    started = time.perf_counter()
    result = assay.evaluate(data, judges=JUDGES, naming="databricks", judge_model=model,
                            concurrency=concurrency, cache="off")
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu
    stats = server.stats()
    calls = n * (chunks + ROW_JUDGES)
    ideal = calls * latency_ms / 1000 / concurrency
    errors = result.assay_metrics["evaluator_errors"]
    found = {"client": "assay.evaluate()", "rows": n, "calls": calls,
             "server requests": stats["requests"], "concurrency": concurrency,
             "latency ms": latency_ms, "ideal s": round(ideal, 2), "wall s": round(wall, 2),
             "of ideal": f"{wall / ideal:.3f}x",
             "client CPU ms/call": round(cpu * 1000 / calls, 3),
             "max in flight": stats["max_in_flight"], "errors": errors}
    raw = asyncio.run(raw_loop(server.base_url, concurrency, calls, server=server))
    raw_row = {**found, "client": "raw aiohttp loop", "rows": "", "server requests":
               raw["requests"], "wall s": round(raw["seconds"], 2),
               "of ideal": f"{raw['seconds'] / ideal:.3f}x",
               "client CPU ms/call": round(raw["cpu_ms"], 3),
               "max in flight": server.stats()["max_in_flight"], "errors": raw["errors"]}
    return {"assay": found, "raw": raw_row}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--chunks", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=100.0, help="mock latency in ms")
    parser.add_argument("--quick", action="store_true", help="100 rows")
    parser.add_argument("--no-pin", action="store_true")
    args = parser.parse_args(argv)
    n = 100 if args.quick else args.rows
    server_cores, client_cores = core_plan(not args.no_pin)
    pin(0, client_cores)
    print(machine_line())
    with MockServerProcess(args.latency, server_cores) as server:
        rows_found = measure(server, n, args.chunks, args.concurrency, args.latency)
    found, raw = rows_found["assay"], rows_found["raw"]
    print(markdown_table(list(found), [list(found.values()), list(raw.values())]))
    if (found["server requests"] != found["calls"] or found["errors"]
            or raw["server requests"] != raw["calls"] or raw["errors"]):
        print("MISMATCH: the server's request count or the errors show a problem",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    raise SystemExit(main())
