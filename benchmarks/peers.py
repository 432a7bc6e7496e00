"""The same judge workload through peer judge libraries, each in its own virtualenv.

Each peer is installed with pip into ``benchmarks/.venvs/<peer>`` (created on first use and
reused after), and driven by ``benchmarks/peer_drivers/run_<peer>.py`` run with that venv's
Python, pointed at the mock server through ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY=dummy``.
A driver warms up, times N judgements and prints one JSON line; the mock server's request
counter says how many model calls those judgements really made. Every peer runs at its own
default concurrency and at an equal one (32). assay runs through the same kind of driver.

A peer that fails to install or to run is reported as a failed row with the reason; the
script goes on with the others.

    python benchmarks/peers.py                         # autoevals, openevals, deepeval, assay
    python benchmarks/peers.py --peers autoevals --latency 0 --n 100
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import venv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import (
    BENCH_DIR,
    MockServerProcess,
    core_plan,
    machine_line,
    markdown_table,
    parse_list,
    pinned,
)

DRIVERS = BENCH_DIR / "peer_drivers"
VENVS = BENCH_DIR / ".venvs"

# peer -> (pip requirements, module that must import once installed)
PEERS: dict[str, tuple[list[str], str]] = {
    "autoevals": (["autoevals", "openai"], "autoevals"),
    "openevals": (["openevals", "langchain-openai"], "openevals"),
    "deepeval": (["deepeval"], "deepeval"),
}
EQUAL_CONCURRENCY = 32


@dataclass
class Row:
    """One driver run, or the reason there is none."""

    peer: str
    requested: str
    latency_ms: float
    result: dict[str, Any] = field(default_factory=dict)
    server_requests: int = 0
    failure: str | None = None
    install_s: float | None = None


def venv_python(peer: str, root: Path) -> Path:
    return root / peer / "bin" / "python"


def ensure_venv(peer: str, root: Path, timeout: float) -> tuple[Path, float | None]:
    """The peer's venv Python, installing the peer first if it does not import yet.

    Returns the interpreter and how long the install took (None when nothing was installed).
    Raises RuntimeError with the reason when it cannot be made to work.
    """
    requirements, module = PEERS[peer]
    python = venv_python(peer, root)
    if python.exists() and subprocess.run(
            [str(python), "-c", f"import {module}"], capture_output=True).returncode == 0:
        return python, None
    started = time.perf_counter()
    if not python.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(root / peer)
    try:
        done = subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                               "--disable-pip-version-check", *requirements],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"pip install {' '.join(requirements)} took over {timeout:g}s") \
            from None
    if done.returncode != 0:
        tail = [line for line in done.stderr.splitlines() if line.strip()][-3:]
        raise RuntimeError(f"pip install failed: {' / '.join(tail)}"[:400])
    check = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True,
                           text=True)
    if check.returncode != 0:
        raise RuntimeError(f"import {module} failed after install: "
                           f"{check.stderr.strip().splitlines()[-1:]}")
    return python, time.perf_counter() - started


def drive(python: Path, peer: str, server: MockServerProcess, concurrency: int, n: int,
          offset: int, timeout: float, cores: set[int] | None) -> tuple[dict[str, Any], int]:
    """Run one driver; return its JSON result and the requests the server counted."""
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "dummy",
           "PYTHONWARNINGS": "ignore", "PYTHONUNBUFFERED": "1"}
    for var in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "BRAINTRUST_API_KEY",
                "CONFIDENT_API_KEY", "ASSAY_JUDGE_MODEL"):
        env.pop(var, None)
    server.reset()
    warmup = min(16, max(4, n // 10))
    command = [str(python), str(DRIVERS / f"run_{peer}.py"), "--n", str(n), "--concurrency",
               str(concurrency), "--offset", str(offset), "--warmup", str(warmup)]
    try:
        done = subprocess.run(pinned(command, cores), capture_output=True, text=True, timeout=timeout,
                              env=env, cwd=DRIVERS)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"driver did not finish within {timeout:g}s") from None
    except OSError as exc:
        raise RuntimeError(f"could not start the driver: {exc}") from None
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        tail = [line for line in done.stderr.splitlines() if line.strip()][-2:]
        raise RuntimeError(f"driver exited {done.returncode} without a result: "
                           f"{' / '.join(tail)}"[:400])
    result = json.loads(lines[-1])
    if not result.get("ok"):
        raise RuntimeError(str(result.get("error", "driver failed")))
    return result, int(server.stats()["requests"])


def evals_for(n: int, concurrency: int, latency_ms: float, max_seconds: float) -> int:
    """N, or fewer where even the ideal rate would take longer than ``max_seconds``."""
    if latency_ms <= 0:
        return n
    ideal = max(1, concurrency) / (latency_ms / 1000)
    return max(min(n, 10), min(n, int(ideal * max_seconds)))


def table(rows: list[Row]) -> str:
    """The markdown comparison table."""
    out = []
    for row in rows:
        if row.failure is not None:
            out.append([row.peer, "-", row.requested, "-", f"{row.latency_ms:g}", "-", "-", "-",
                        "-", "-", "-", f"FAILED: {row.failure}"])
            continue
        r = row.result
        made = r["evals"] + r["warmup"]
        per_eval = row.server_requests / made if made else 0.0
        calls = r["evals_per_s"] * per_eval
        ideal = (r["concurrency"] / (row.latency_ms / 1000)) if row.latency_ms > 0 else None
        out.append([
            row.peer, r["version"], row.requested, r["concurrency"], f"{row.latency_ms:g}",
            r["evals"], f"{r['evals_per_s']:.1f}", f"{per_eval:.2f}", f"{calls:.1f}",
            f"{calls / ideal:.0%}" if ideal else "-", f"{r['cpu_ms_per_eval']:.2f}",
            f"{r['errors']} errors; {r['mode']}"
            + (f"; installed in {row.install_s:.0f}s" if row.install_s else ""),
        ])
    return markdown_table(["library", "version", "run as", "concurrency", "latency ms",
                           "evals", "evals/s", "calls/eval (server)", "calls/s",
                           "of ideal", "client CPU ms/eval", "notes"], out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--peers", default=",".join([*PEERS, "assay"]),
                        help=f"comma-separated subset of {', '.join([*PEERS, 'assay'])}")
    parser.add_argument("--n", type=int, default=300, help="judgements per run")
    parser.add_argument("--latency", default="0,100", help="mock latencies in ms")
    parser.add_argument("--max-seconds", type=float, default=15.0,
                        help="fewer than N judgements where the ideal rate would take longer")
    parser.add_argument("--venvs", type=Path, default=VENVS,
                        help="where the peers' virtualenvs live")
    parser.add_argument("--install-timeout", type=float, default=900.0)
    parser.add_argument("--run-timeout", type=float, default=300.0)
    parser.add_argument("--no-pin", action="store_true")
    args = parser.parse_args(argv)
    peers = [p for p in args.peers.split(",") if p]
    unknown = [p for p in peers if p not in PEERS and p != "assay"]
    if unknown:
        parser.error(f"unknown peer(s) {unknown}")
    server_cores, client_cores = core_plan(not args.no_pin)
    print(f"# peers\n\n{machine_line()}; server cores {server_cores or 'any'}, "
          f"driver cores {client_cores or 'any'}\n", flush=True)

    rows: list[Row] = []
    pythons: dict[str, Path] = {}
    installs: dict[str, float | None] = {}
    for peer in peers:
        if peer == "assay":
            pythons[peer] = Path(sys.executable)
            continue
        print(f"  preparing {peer}...", file=sys.stderr, flush=True)
        try:
            pythons[peer], installs[peer] = ensure_venv(peer, args.venvs, args.install_timeout)
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            rows.append(Row(peer, "install", 0.0, failure=str(exc)))

    offset = 0
    with MockServerProcess(0.0, server_cores) as server:
        for latency in parse_list(args.latency, float):
            server.configure(latency)
            for peer in peers:
                if peer not in pythons:
                    continue
                for label, concurrency in (("default", 0), ("equal", EQUAL_CONCURRENCY)):
                    guess = 1 if (concurrency == 0 and peer in ("autoevals", "openevals")) \
                        else (concurrency or 20)
                    n = evals_for(args.n, guess, latency, args.max_seconds)
                    row = Row(peer, label, latency, install_s=installs.pop(peer, None))
                    try:
                        row.result, row.server_requests = drive(
                            pythons[peer], peer, server, concurrency, n, offset,
                            args.run_timeout, client_cores)
                    except RuntimeError as exc:
                        row.failure = str(exc)
                    offset += n + 100
                    rows.append(row)
                    status = row.failure or f"{row.result['evals_per_s']:.1f} evals/s"
                    print(f"  latency {latency:g} ms, {peer} ({label}): {status}",
                          file=sys.stderr, flush=True)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
