"""Where a judge call's client CPU goes: cProfile over one implementation at zero latency.

At zero server latency a client's calls/s is bounded by its own CPU time per call, so the
profile of that run is the list of what to make cheaper. The mock server runs in its own
process (and core), so only the client appears in the profile.

    python benchmarks/profile_judge.py --impl assay-api --calls 3000 --concurrency 32
    python benchmarks/profile_judge.py --impl assay-engine --sort tottime --top 40
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import sys

from _common import MockServerProcess, core_plan, pin
from judge_throughput import CLASSES, Counter, measure


async def _profiled(name: str, server: MockServerProcess, concurrency: int, calls: int,
                    profiler: cProfile.Profile) -> None:
    cls = CLASSES[name]
    counter = Counter()
    await measure(cls, server, concurrency, min(calls, 200), counter)  # imports, first session
    impl = cls(server.base_url, concurrency)
    await impl.setup()
    try:
        await impl.run(impl.prepare(counter.take(2 * concurrency), 2 * concurrency))
        items = impl.prepare(counter.take(calls), calls)
        profiler.enable()
        errors = await impl.run(items)
        profiler.disable()
    finally:
        await impl.close()
    if errors:
        print(f"warning: {errors} calls failed", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--impl", default="assay-api", choices=sorted(CLASSES))
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--sort", default="cumulative", choices=("cumulative", "tottime"))
    parser.add_argument("--top", type=int, default=45)
    parser.add_argument("--output", help="also save the raw profile here (pstats format)")
    args = parser.parse_args(argv)
    server_cores, client_cores = core_plan(True)
    pin(0, client_cores)
    profiler = cProfile.Profile()
    with MockServerProcess(0.0, server_cores) as server:
        asyncio.run(_profiled(args.impl, server, args.concurrency, args.calls, profiler))
    if args.output:
        profiler.dump_stats(args.output)
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    total = stats.total_tt  # type: ignore[attr-defined]
    print(f"# {args.impl}: {args.calls} calls at concurrency {args.concurrency}, latency 0; "
          f"{total:.2f} s profiled CPU, {total / args.calls * 1000:.3f} ms/call "
          "(cProfile inflates this; compare shares, not absolutes)\n")
    stats.sort_stats(args.sort).print_stats(args.top)
    print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
