"""What every peer driver shares: arguments, the workload, timing and the one JSON line out.

Drivers run inside a peer's own virtualenv, where assay is not installed, so this module and
``_workload`` use the standard library only. A driver is told how many judgements to make and
at what concurrency (0: the peer's own default), warms up, times the rest, and prints exactly
one JSON object on stdout; the caller checks the mock server's request counter against it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _workload import triples

Triple = tuple[str, str, str]
MODEL = "gpt-4o-mini"  # a name the peers know (prices, capabilities); the mock ignores it


def parse_args(description: str) -> argparse.Namespace:
    """``--n``, ``--concurrency`` (0 = the peer's default), ``--offset``, ``--warmup``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=0,
                        help="0: whatever the peer does by default")
    parser.add_argument("--offset", type=int, default=0,
                        help="first workload index, so runs never repeat a request")
    parser.add_argument("--warmup", type=int, default=16)
    return parser.parse_args()


def check_env() -> None:
    """Refuse to run against anything but a local server (never a real provider)."""
    base = os.environ.get("OPENAI_BASE_URL", "")
    if not base.startswith(("http://127.0.0.1", "http://localhost")):
        raise SystemExit(f"OPENAI_BASE_URL must point at the local mock server, not {base!r}")


async def gather_limited(items: Sequence[Triple], concurrency: int,
                         judge: Callable[[Triple], Awaitable[bool]]) -> int:
    """Judge every item with at most ``concurrency`` in flight; return how many failed."""
    semaphore = asyncio.Semaphore(concurrency)

    async def one(item: Triple) -> bool:
        async with semaphore:
            return await judge(item)

    results = await asyncio.gather(*(one(item) for item in items), return_exceptions=True)
    first = next((r for r in results if isinstance(r, BaseException)), None)
    if first is not None:
        print(f"first failure: {type(first).__name__}: {first}", file=sys.stderr)
    return sum(1 for r in results if r is not True)


def _measure(result: dict[str, Any], n: int, started: float, cpu: float, errors: int) -> None:
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu
    result.update(ok=True, seconds=seconds, errors=errors,
                  evals_per_s=n / seconds if seconds else 0.0,
                  cpu_ms_per_eval=cpu / n * 1000)


def run(peer: str, version: str, mode: str, concurrency: int, args: argparse.Namespace,
        batch: Callable[[Sequence[Triple]], int] | None = None,
        async_batch: Callable[[Sequence[Triple]], Awaitable[int]] | None = None,
        setup: Callable[[], Awaitable[None]] | None = None,
        teardown: Callable[[], Awaitable[None]] | None = None) -> None:
    """Warm up with ``args.warmup`` judgements, time ``args.n`` more, print the JSON line.

    ``batch`` (synchronous) or ``async_batch`` judges a list of triples however the peer runs
    them and returns the failures. The async form runs warm-up and timed part in one event
    loop, after ``setup`` (where clients bound to that loop are made) and before
    ``teardown``.
    """
    check_env()
    result: dict[str, Any] = {"peer": peer, "version": version, "mode": mode,
                              "concurrency": concurrency, "evals": args.n,
                              "warmup": args.warmup}
    warm = triples(args.offset, args.warmup)
    items = triples(args.offset + args.warmup, args.n)
    try:
        if async_batch is not None:
            async def timed() -> None:
                if setup is not None:
                    await setup()
                try:
                    if warm:
                        await async_batch(warm)
                    cpu, started = time.process_time(), time.perf_counter()
                    errors = await async_batch(items)
                    _measure(result, args.n, started, cpu, errors)
                finally:
                    if teardown is not None:
                        await teardown()

            asyncio.run(timed())
        else:
            assert batch is not None
            if warm:
                batch(warm)
            cpu, started = time.process_time(), time.perf_counter()
            errors = batch(items)
            _measure(result, args.n, started, cpu, errors)
    except Exception as exc:
        traceback.print_exc()
        result.update(ok=False, error=f"{type(exc).__name__}: {exc}"[:500])
    print(json.dumps(result), flush=True)
