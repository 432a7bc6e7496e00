"""Latency of ``assay serve``'s list and case endpoints over a store holding a large run.

Builds a store with one run of ``--cases`` cases (100,000 by default; three evaluators each,
written through RunStore as a run writes them) plus a few small runs, starts ``assay serve`` on
it as a separate process, and times sequential requests from one client: p50, p95 and max
milliseconds per endpoint, after a warm-up. Offsets and case ids are drawn at random across the
whole run, so deep pages are measured, not only the first.

    python benchmarks/server_latency.py                       # 100,000 cases, SQLite
    python benchmarks/server_latency.py --cases 20000 --requests 30
    python benchmarks/server_latency.py --store "$ASSAY_TEST_POSTGRES_URL"   # an empty database
    python benchmarks/server_latency.py --keep /tmp/big.db   # keep (and reuse) the SQLite file
    python benchmarks/server_latency.py --keep /tmp/big.db --only "text search" --only "page 1"

A measurement, not a test: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from assay.store.runs import RunStore  # noqa: E402
from assay.testing.runs import write_run  # noqa: E402


def build(url: str, cases: int) -> str:
    store = RunStore(url)
    existing = [r for r in store.run_records(100) if r.suite == "big"]
    if existing:
        store.close()
        return existing[0].id
    started = time.perf_counter()
    for seed in range(3):
        write_run(store, 50, seed=seed + 10)
    run_id = write_run(store, cases, suite="big", seed=1, hostile_at=[4])
    store.close()
    print(f"wrote {cases:,} cases in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return run_id


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def served(url: str, timeout: float = 60) -> Iterator[httpx.Client]:
    """``assay serve`` on ``url`` in a process of its own, and a client of it once it
    answers; the server is stopped when the block ends."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "assay", "serve", "--store", url,
                               "--port", str(port), "--no-runs"], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=timeout)
        for _ in range(300):
            try:
                if client.get("/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        yield client
    finally:
        server.terminate()
        server.wait(timeout=30)


def measure(client: httpx.Client, make: object, requests: int, warmup: int = 5) -> list[float]:
    times = []
    for i in range(warmup + requests):
        path, params = make()  # type: ignore[operator]
        started = time.perf_counter()
        response = client.get(path, params=params)
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise SystemExit(f"{path} {params}: {response.status_code} {response.text[:300]}")
        if i >= warmup:
            times.append(elapsed)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--store", help="a store URL (default: a new SQLite file)")
    parser.add_argument("--keep", type=Path, help="the SQLite file to build or reuse")
    parser.add_argument("--only", action="append", default=[], metavar="TEXT",
                        help="measure only the endpoints whose name contains TEXT "
                        "(repeatable)")
    args = parser.parse_args()
    tmp = tempfile.TemporaryDirectory()
    path = args.keep or Path(tmp.name) / "runs.db"
    url = args.store or f"sqlite:///{path}"
    run_id = build(url, args.cases)
    rng = random.Random(0)
    with served(url) as client:
        cases = f"/runs/{run_id}/cases"
        deep = max(0, args.cases - 50)
        endpoints = [
            ("GET /runs", lambda: ("/runs", {"limit": 50})),
            ("GET /runs/{id}", lambda: (f"/runs/{run_id}", {})),
            ("cases, problems first, page 1", lambda: (cases, {})),
            ("cases, problems first, random page", lambda: (cases, {
                "offset": rng.randrange(0, deep + 1)})),
            ("cases, verdict=fail", lambda: (cases, {"verdict": "fail"})),
            ("cases, sort=-score, random page", lambda: (cases, {
                "sort": "-score", "offset": rng.randrange(0, deep + 1)})),
            ("cases, one evaluator failed", lambda: (cases, {
                "evaluator": "relevance", "evaluator_state": "failed"})),
            ("one case, random", lambda: (f"/runs/{run_id}/case", {
                "case_id": f"case-{rng.randrange(args.cases):06d}"})),
            ("histograms", lambda: (f"/runs/{run_id}/histograms", {})),
            ("cases, text search, a case id", lambda: (cases, {
                "q": f"case-{rng.randrange(args.cases):06d}"})),
            ("cases, text search, a word in every output", lambda: (cases, {
                "q": "answer"})),
            ("cases, text search, no match", lambda: (cases, {
                "q": f"zz{rng.randrange(10**6)}"})),
            ("cases, text search, beyond ASCII, no match", lambda: (cases, {
                "q": f"STRAẞE-{rng.randrange(10**6)}"})),
        ]
        if args.only:
            endpoints = [e for e in endpoints if any(t in e[0] for t in args.only)]
        print(f"| endpoint ({args.cases:,} cases, {args.requests} requests) | p50 ms | "
              "p95 ms | max ms |")
        print("|---|---:|---:|---:|")
        for name, make in endpoints:
            times = sorted(measure(client, make, args.requests))
            p95 = statistics.quantiles(times, n=20)[18] if len(times) >= 20 else times[-1]
            print(f"| {name} | {statistics.median(times):.1f} | {p95:.1f} | {times[-1]:.1f} |")
    tmp.cleanup()


if __name__ == "__main__":
    main()
