"""What the benchmark scripts share: the mock server in its own process, CPU pinning, tables.

The mock server always runs as a separate process (``python -m assay.testing.mock_server``), so
its work never shares an interpreter, a GIL or an event loop with the client being measured.
On Linux each side can be pinned to its own core; on a 2-core machine that is the only way to
stop client and server from taking turns on the same core and reading as each other's cost.
Admin calls use urllib and run outside any timed section.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_count() -> int:
    """CPUs this process may run on (respects an inherited affinity mask)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def core_plan(pin: bool) -> tuple[set[int] | None, set[int] | None]:
    """(server cores, client cores): the last available core for the server, the rest for us.

    None means "do not pin" (pinning off, a single core, or a platform without affinity).
    """
    if not pin or not hasattr(os, "sched_getaffinity"):
        return None, None
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return None, None
    return {cores[-1]}, set(cores[:-1])


def pin(pid: int, cores: set[int] | None) -> None:
    """Pin ``pid`` (0: this process) to ``cores``; silently a no-op where unsupported."""
    if cores and hasattr(os, "sched_setaffinity"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(pid, cores)


def pinned(command: list[str], cores: set[int] | None) -> list[str]:
    """``command`` prefixed with ``taskset`` for ``cores``; unchanged without taskset or cores."""
    if not cores or shutil.which("taskset") is None:
        return command
    return ["taskset", "-c", ",".join(str(c) for c in sorted(cores)), *command]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of another process (Linux /proc); 0.0 where unavailable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # After the command name: state is field 3, utime field 14, stime field 15 (1-based).
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class MockServerProcess:
    """``python -m assay.testing.mock_server`` on a free port, optionally pinned to a core."""

    def __init__(self, latency_ms: float = 0.0, cores: set[int] | None = None,
                 python: str | None = None) -> None:
        self.port = free_port()
        self.latency_ms = latency_ms
        self.cores = cores
        self.python = python or sys.executable
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (ends in /v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 30.0) -> MockServerProcess:
        """Start the server and wait until it answers ``GET /v1/models``."""
        self.proc = subprocess.Popen(
            [self.python, "-m", "assay.testing.mock_server", "--port", str(self.port),
             "--latency-ms", str(self.latency_ms)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO_DIR)
        pin(self.proc.pid, self.cores)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"mock server exited with {self.proc.returncode}: {err}")
            with contextlib.suppress(OSError):
                self._request("GET", "/v1/models", timeout=1.0)
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"mock server did not answer within {timeout:g}s")

    def stop(self) -> None:
        """Terminate the server (kill it if it does not stop within 5 s)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def __enter__(self) -> MockServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _request(self, method: str, path: str, body: Any = None,
                 timeout: float = 10.0) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data,
                                     method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read() or b"null")

    def configure(self, latency_ms: float) -> None:
        """Set the answer latency (no faults) and reset the counters."""
        self.latency_ms = latency_ms
        self._request("POST", "/admin/config", {"latency_ms": latency_ms})

    def reset(self) -> None:
        """Zero the request counters."""
        self._request("POST", "/admin/reset", {})

    def stats(self) -> dict[str, Any]:
        """The server's counters since the last reset (``requests``, ``completed``...)."""
        return dict(self._request("GET", "/admin/stats"))

    def cpu_seconds(self) -> float:
        """CPU seconds the server process has used so far."""
        return process_cpu_seconds(self.pid)


@contextlib.contextmanager
def mock_server(latency_ms: float = 0.0, cores: set[int] | None = None) -> Iterator[
        MockServerProcess]:
    """A started :class:`MockServerProcess`, stopped on exit whatever happens."""
    server = MockServerProcess(latency_ms, cores)
    try:
        yield server.start()
    finally:
        server.stop()


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table; numbers right-aligned by the column markers."""
    def cell(value: Any) -> str:
        return "" if value is None else str(value)

    numeric = [all(_is_number(r[i]) for r in rows if cell(r[i]) not in ("", "-"))
               for i in range(len(headers))]
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _is_number(value: Any) -> bool:
    if isinstance(value, int | float):
        return True
    try:
        float(str(value).rstrip("%"))
    except ValueError:
        return False
    return True


def parse_list(text: str, kind: type[int] | type[float] = int) -> list[Any]:
    """``"8,32,128"`` -> ``[8, 32, 128]``."""
    return [kind(part) for part in text.split(",") if part.strip()]


def machine_line() -> str:
    """One line that says what the numbers were measured on."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return (f"python {sys.version.split()[0]}, {os.cpu_count()} cores, "
            f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start")
