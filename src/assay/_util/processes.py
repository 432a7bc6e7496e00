"""Running a program for assay: one helper for every subprocess (agents run as ``cli``
targets, ``code_judge`` scripts), so they all get the same guarantees.

- Argument lists only: nothing here ever builds a shell command from data.
- Each program starts its own process group, and a timeout, a cancelled run (Ctrl-C, SIGTERM)
  or an error kills the whole group: ``sh -c`` and agents that fork leave no orphans.
- Output read on a timeout is kept (what a hung program already wrote to stderr is the part
  most worth showing), and waiting for a grandchild that holds the pipes open is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass
class Finished:
    """What a program did: its output, exit status, and whether it ran out of time."""

    stdout: bytes
    stderr: bytes
    returncode: int | None
    timed_out: bool


class StartFailed(Exception):
    """The program could not be started (not found, not executable, arguments too long, a
    NUL byte in an argument); ``reason`` says which."""

    def __init__(self, reason: str, *, too_long: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.too_long = too_long


def kill_group(process: asyncio.subprocess.Process) -> None:
    """Kill the process and everything it started."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            process.kill()


async def run_program(argv: list[str], *, stdin: bytes | None = None,
                      cwd: str | os.PathLike[str] | None = None,
                      env: Mapping[str, str] | None = None,
                      timeout_s: float | None = None) -> Finished:
    """Run ``argv`` to completion (or ``timeout_s``), feeding ``stdin`` when given.

    Raises :class:`StartFailed` when it cannot start; never leaves it running: on a timeout
    or a cancellation its process group is killed before this returns (or re-raises).
    """
    import errno

    try:
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=dict(env) if env is not None else None,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=hasattr(os, "killpg"))
    except OSError as exc:
        raise StartFailed(str(exc.strerror or exc), too_long=exc.errno == errno.E2BIG) \
            from None
    except ValueError:  # a NUL byte: no argument or environment variable can hold one
        raise StartFailed("an argument or environment value holds a NUL byte") from None
    assert process.stdout and process.stderr
    reads = [asyncio.ensure_future(process.stdout.read()),
             asyncio.ensure_future(process.stderr.read())]
    tasks = [*reads, asyncio.ensure_future(process.wait())]
    if stdin is not None:
        assert process.stdin
        tasks.append(asyncio.ensure_future(_feed(process.stdin, stdin)))
    try:
        _, pending = await asyncio.wait(tasks, timeout=timeout_s)
        if pending:
            kill_group(process)
            # A grandchild that left the process group could hold the pipes open: bound it.
            await asyncio.wait(pending, timeout=5.0)
        out, err = (r.result() if r.done() and not r.cancelled() else b"" for r in reads)
        return Finished(out, err, process.returncode, timed_out=bool(pending))
    finally:
        if process.returncode is None:
            kill_group(process)
        for task in tasks:
            task.cancel()


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    """Write the input and close stdin; a program that does not read it is not an error."""
    try:
        stdin.write(data)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        stdin.close()
