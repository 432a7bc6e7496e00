"""Cases per second on a real local Ray cluster: local, one node, two nodes; and the Ray
path's own cost per case at latency 0.

    python benchmarks/ray_scaling.py [--cases 40] [--sleep 1.0] [--busy 0.2] [--quick]

Each row runs the same suite through ``assay.evaluate`` with a deterministic evaluator:

- ``sleep``: an agent that sleeps ``--sleep`` seconds (I/O bound: what an agent waiting on a
  model or a sandbox does). Every row runs it with the same number of cases in flight per
  worker, so the rows compare how much of the wait the workers overlap.
- ``busy``: an agent that computes for ``--busy`` seconds on one core (CPU bound: a local
  agent or a local judge). This is what more nodes are for.
- ``zero``: an agent that answers at once, ``--cases x 10`` of them: the Ray path's own cost
  per case (actor calls, pickling, the driver storing) against the local run's.

The cluster is started here with ``ray start`` as separate processes on 127.0.0.1 (a head
and, for the two-node rows, a worker), each given one CPU, and stopped at the end. On a
two-core machine two one-CPU nodes are all the cores there are, so the figures show Ray's
overhead and the scaling of CPU-bound agents up to two, not a data centre.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent / "src"))
RAY = Path(sys.executable).parent / "ray"


def sleep_agent(question: str, seconds: float = float(os.environ.get("BENCH_SLEEP", 1))) -> str:
    time.sleep(seconds)
    return question


def busy_agent(question: str, seconds: float = float(os.environ.get("BENCH_BUSY", 0.5))) -> str:
    end = time.thread_time() + seconds
    n = 0
    while time.thread_time() < end:
        n += 1
    return question


def zero_agent(question: str) -> str:
    return question


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ray(args: list[str], env: dict[str, str]) -> None:
    subprocess.run([str(RAY), *args], env=env, check=True, capture_output=True, timeout=300)


def _stop(temp: str) -> None:
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            command = (Path("/proc") / pid / "cmdline").read_bytes()
        except OSError:
            continue
        if temp.encode() in command:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)


def _run(agent: Any, cases: int, executor: str, workers: int | None) -> float:
    import assay
    from assay.types.config import RayOptions

    rows = [{"id": f"c{i}", "input": f"c{i}", "expected_output": f"c{i}"} for i in range(cases)]
    started = time.perf_counter()
    result = assay.evaluate(rows, target=agent, evaluators=["exact_match"], store=":memory:",
                            cache="off", concurrency=8, executor=executor,  # type: ignore[arg-type]
                            ray=RayOptions(workers=workers))
    took = time.perf_counter() - started
    assert result.summary.cases == cases and result.passed, result.reason
    return took


def _row(agent: Any, cases: int, executor: str, workers: int | None) -> tuple[float, float]:
    """(total seconds for ``cases``, seconds per case once running): each row is run with
    ``cases`` and ``2 * cases``, so the difference is what the extra cases cost and the rest
    is starting (Ray: the workers' processes, each building the run's runner)."""
    once = _run(agent, cases, executor, workers)
    twice = _run(agent, 2 * cases, executor, workers)
    return once, max(twice - once, 1e-9) / cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--sleep", type=float, default=1.0)
    parser.add_argument("--busy", type=float, default=0.2)
    parser.add_argument("--quick", action="store_true", help="8 cases, short agents")
    args = parser.parse_args()
    if args.quick:
        args.cases, args.sleep, args.busy = 8, 0.2, 0.05
    os.environ["BENCH_SLEEP"], os.environ["BENCH_BUSY"] = str(args.sleep), str(args.busy)
    if not RAY.exists():
        print("Ray is not installed: pip install 'assay[ray]'")
        return 2
    temp = tempfile.mkdtemp(prefix="raybench", dir="/tmp")
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0",
           "PYTHONPATH": os.pathsep.join([str(BENCH_DIR), str(BENCH_DIR.parent / "src")])}
    os.environ.update({k: env[k] for k in ("RAY_AUTH_MODE", "RAY_USAGE_STATS_ENABLED")})
    port = _port()
    address = f"127.0.0.1:{port}"
    rows: list[tuple[str, str, int, float, float]] = []
    try:
        from ray_scaling import busy_agent as busy  # by module, so workers import it
        from ray_scaling import sleep_agent as sleepy
        from ray_scaling import zero_agent as zero

        agents = (("sleep", sleepy, args.cases), ("busy", busy, args.cases),
                  ("zero", zero, args.cases * 10))
        for name, agent, cases in agents:
            rows.append((name, "local", cases, *_row(agent, cases, "local", None)))
        _ray(["start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port),
              "--num-cpus", "1", "--include-dashboard=false", "--disable-usage-stats",
              "--temp-dir", temp], env)
        os.environ["RAY_ADDRESS"] = address
        for name, agent, cases in agents:
            rows.append((name, "ray, 1 node", cases, *_row(agent, cases, "ray", 1)))
        _ray(["start", "--address", address, "--node-ip-address", "127.0.0.1", "--num-cpus",
              "1", "--disable-usage-stats"], env)
        time.sleep(2)
        for name, agent, cases in agents:
            rows.append((name, "ray, 2 nodes", cases, *_row(agent, cases, "ray", 2)))
    finally:
        _stop(temp)
    print(f"{'agent':6} {'where':13} {'cases':>6} {'total s':>8} {'start s':>8} "
          f"{'ms/case':>8} {'cases/s':>8}")
    for name, where, cases, total, per_case in rows:
        print(f"{name:6} {where:13} {cases:>6} {total:>8.2f} "
              f"{max(total - cases * per_case, 0):>8.2f} {per_case * 1000:>8.1f} "
              f"{1 / per_case:>8.1f}")
    print("start s: the total less the cases' own time (from a second run of twice the "
          "cases); ms/case and cases/s: once running")
    return 0


if __name__ == "__main__":
    sys.exit(main())
