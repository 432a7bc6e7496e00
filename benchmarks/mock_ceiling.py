"""How many requests per second the mock server itself can answer, so it is not the bottleneck.

Starts the mock server (latency 0) in its own process, pinned to its own core where the OS
allows, and loads it from several client processes at once, each a bare aiohttp loop posting
pre-serialised judge request bodies. The rate is read from the server's own counter over a
fixed window after a warm-up, together with the CPU the server process used in that window.

The server is a single asyncio process, so it saturates at one core: ``server CPU`` near 100%
means the row's rate is the ceiling; below that, the clients (which share the remaining core)
are the limit and ``1 / (server CPU per request)`` estimates what the server could do.

    python benchmarks/mock_ceiling.py                      # 1, 2 and 3 client processes
    python benchmarks/mock_ceiling.py --processes 2 --seconds 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import orjson
from _common import (
    MockServerProcess,
    core_plan,
    machine_line,
    markdown_table,
    parse_list,
    pinned,
)


async def _client(url: str, concurrency: int, seconds: float, offset: int) -> dict[str, int]:
    """Post as fast as possible for ``seconds``; count answers and failures."""
    from _workload import triples
    from judge_throughput import judge_body

    bodies = [orjson.dumps(judge_body(expected, actual))
              for _, expected, actual in triples(offset, 2000)]
    headers = {"Content-Type": "application/json"}
    done = failed = 0
    deadline = time.monotonic() + seconds
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def worker(start: int) -> None:
            nonlocal done, failed
            i = start
            while time.monotonic() < deadline:
                try:
                    async with session.post(url, data=bodies[i % len(bodies)],
                                            headers=headers) as resp:
                        orjson.loads(await resp.read())
                        if resp.status == 200:
                            done += 1
                        else:
                            failed += 1
                except (aiohttp.ClientError, OSError):
                    failed += 1
                i += concurrency

        await asyncio.gather(*(worker(k) for k in range(concurrency)))
    return {"done": done, "failed": failed}


def run_clients(server: MockServerProcess, processes: int, concurrency: int, seconds: float,
                warmup: float, client_cores: set[int] | None) -> dict[str, float]:
    """Load the server from ``processes`` clients; measure over ``seconds`` after ``warmup``."""
    command = [sys.executable, str(Path(__file__).resolve()), "--client", server.base_url,
               "--concurrency", str(concurrency), "--seconds", str(warmup + seconds + 0.5)]
    command = pinned(command, client_cores)
    procs = [subprocess.Popen([*command, "--offset", str(k * 2000)], stdout=subprocess.PIPE,
                              text=True) for k in range(processes)]
    try:
        time.sleep(warmup + 1.0)  # interpreter start-up, imports and warm-up
        before, cpu_before, t0 = server.stats(), server.cpu_seconds(), time.perf_counter()
        time.sleep(seconds)
        after, cpu_after, t1 = server.stats(), server.cpu_seconds(), time.perf_counter()
    finally:
        outputs = [proc.communicate(timeout=warmup + seconds + 60)[0] for proc in procs]
    failed = sum(json.loads(out.strip().splitlines()[-1])["failed"] for out in outputs if out)
    served = after["completed"] - before["completed"]
    window = t1 - t0
    cpu = cpu_after - cpu_before
    return {"processes": processes, "concurrency": concurrency, "requests": served,
            "rate": served / window, "server_cpu": cpu / window,
            "cpu_us_per_request": cpu / served * 1e6 if served else 0.0, "failed": failed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--processes", default="1,2,3", help="client process counts to try")
    parser.add_argument("--concurrency", type=int, default=64,
                        help="requests in flight per client process")
    parser.add_argument("--seconds", type=float, default=4.0, help="measured window")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--no-pin", action="store_true")
    parser.add_argument("--client", metavar="BASE_URL", help=argparse.SUPPRESS)
    parser.add_argument("--offset", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.client:
        result = asyncio.run(_client(f"{args.client}/chat/completions", args.concurrency,
                                     args.seconds, args.offset))
        print(json.dumps(result))
        return 0

    server_cores, client_cores = core_plan(not args.no_pin)
    print(f"# mock server ceiling\n\n{machine_line()}; server cores {server_cores or 'any'}, "
          f"client cores {client_cores or 'any'}\n", flush=True)
    rows = []
    best = 0.0
    with MockServerProcess(0.0, server_cores) as server:
        for processes in parse_list(args.processes):
            r = run_clients(server, processes, args.concurrency, args.seconds, args.warmup,
                            client_cores)
            estimate = 1e6 / r["cpu_us_per_request"] if r["cpu_us_per_request"] else 0.0
            best = max(best, r["rate"])
            rows.append([processes, processes * args.concurrency, int(r["requests"]),
                         f"{r['rate']:.0f}", f"{r['server_cpu']:.0%}",
                         f"{r['cpu_us_per_request']:.0f}", f"{estimate:.0f}", r["failed"]])
            print(f"  {processes} client process(es): {r['rate']:.0f} requests/s",
                  file=sys.stderr, flush=True)
    print(markdown_table(["client processes", "in flight", "requests", "requests/s",
                          "server CPU", "server CPU us/request",
                          "ceiling at 100% of a core", "failed"], rows))
    print(f"\nmock server ceiling: about {best:.0f} requests/s measured "
          "(judge bodies, latency 0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
