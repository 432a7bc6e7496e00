"""How close a calibration comes to the ideal time: LLMBar in both orders on a slow mock judge.

``assay.calibrate("llmbar")`` judges all 419 LLMBar pairs (Natural and Adversarial) with the
``pairwise`` judge, which asks for every pair in both orders: 838 judge calls. Against
``python -m assay.testing.mock_server`` in a separate process answering after ``--latency-ms``
(200 by default), at ``--concurrency`` 32, the ideal time is calls x latency / concurrency
(5.24 s). The script times the whole library call (loading the set, the run through
``assay.evaluate``, storing every record, the statistics with 1,000 bootstrap resamples and
storing the report), with the response cache off so that every call reaches the server, after
a warm-up call that pays the imports. It checks the server saw exactly 838 requests and prints
the time, the ideal and their ratio; the target is within 1.2x of the ideal. Right after
each calibration, the raw aiohttp loop of ``judge_throughput.py`` makes the same number of
calls at the same concurrency and latency: what the machine itself allows at that moment.

    python benchmarks/calibration_throughput.py
    python benchmarks/calibration_throughput.py --latency-ms 100 --concurrency 64 --repeat 3
    python benchmarks/calibration_throughput.py --quick   # smoke-sized: LLMBar Natural, 20 ms
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import MockServerProcess, core_plan, machine_line, markdown_table, pin
from judge_throughput import raw_loop

from assay.calibration.sets import load_set
from assay.run.calibrate import calibrate

TARGET = 1.2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--set", default="llmbar")
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--no-pin", action="store_true")
    parser.add_argument("--quick", action="store_true",
                        help="smoke-sized: LLMBar Natural (200 calls) at 20 ms, 100 resamples")
    args = parser.parse_args(argv)
    if args.quick:
        args.set, args.latency_ms, args.resamples = "llmbar-natural", 20.0, 100
    items = len(load_set(args.set).items)
    calls = 2 * items
    ideal = calls * args.latency_ms / 1000 / args.concurrency
    server_cores, client_cores = core_plan(not args.no_pin)
    pin(0, client_cores)
    rows = []
    with MockServerProcess(latency_ms=0.0, cores=server_cores) as server, \
            tempfile.TemporaryDirectory() as tmp:
        model = f"{server.base_url}#bench"
        store = f"sqlite:///{Path(tmp) / 'runs.db'}"
        # Warm-up: imports, the store's schema, the HTTP session.
        calibrate(args.set, limit=8, judge_model=model, store=store, cache="off",
                  concurrency=args.concurrency, resamples=50)
        server.configure(args.latency_ms)
        times = []
        for run in range(args.repeat):
            server.reset()
            started = time.perf_counter()
            report = calibrate(args.set, judge_model=model, store=store, cache="off",
                               concurrency=args.concurrency, resamples=args.resamples)
            wall = time.perf_counter() - started
            seen = server.stats()
            times.append(wall)
            errors = report.counts.errors + (0 if seen["requests"] == calls else
                                             abs(seen["requests"] - calls))
            raw = asyncio.run(raw_loop(server.base_url, args.concurrency, calls,
                                   start=10_000))["seconds"]
            rows.append([args.set, items, calls, args.concurrency, f"{args.latency_ms:g}",
                         f"{wall:.2f}", f"{ideal:.2f}", f"{wall / ideal:.2f}x",
                         f"{raw:.2f}", f"{wall / raw:.2f}x", seen["requests"],
                         seen["max_in_flight"], errors])
            print(f"run {run + 1}: {wall:.2f} s, {seen['requests']} requests, max in flight "
                  f"{seen['max_in_flight']}", file=sys.stderr)
    print(machine_line())
    print()
    print(markdown_table(["set", "pairs", "judge calls", "concurrency", "latency ms", "wall s",
                          "ideal s", "of ideal", "raw aiohttp s", "of raw",
                          "server requests", "max in flight", "errors"], rows))
    best = statistics.median(times)
    verdict = "meets" if best <= TARGET * ideal else "misses"
    print(f"\n- calibration of {args.set}: median {best:.2f} s for {calls} judge calls, "
          f"{best / ideal:.2f}x the ideal {ideal:.2f} s ({verdict} the {TARGET}x target)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
