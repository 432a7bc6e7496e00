"""A command as the agent: ``provider: cli`` (or ``command``).

``command`` is a shell string (run with ``sh -c``) or an argv list (run directly). The input
is substituted for ``{input}`` (the input as text, JSON when structured) or ``{PROMPT}`` (the
user's question) when either appears, and written to stdin otherwise. Substituted into a shell
string, values are shell-quoted, so an input can never run commands of its own. The answer is
stdout: parsed when it is a JSON object or array, else the text. A non-zero exit, a timeout or
a command that cannot start becomes ``Execution.error`` with the tail of stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from assay.errors import ConfigError
from assay.model import Case, Execution
from assay.targets.base import Target
from assay.targets.config import FieldSpec, TargetConfig
from assay.targets.inputs import elapsed_ms, input_text, parse_output

STDERR_TAIL = 2000
DEFAULT_TIMEOUT_S = 120.0
PLACEHOLDERS = ("{input}", "{PROMPT}")


class CommandTarget(Target):
    """Runs a command once per case."""

    FIELDS: ClassVar[dict[str, FieldSpec]] = {
        "command": FieldSpec((str, list), "a command string or a list of arguments"),
        "command_template": FieldSpec((str, list), "a command string or a list of arguments"),
        "timeout_s": FieldSpec((int, float), "seconds, a number"),
        "timeout_seconds": FieldSpec((int, float), "seconds, a number"),
        "cwd": FieldSpec((str,), "a directory, relative to the suite"),
        "env": FieldSpec((dict,), "a mapping of extra environment variables"),
    }
    REQUIRED: ClassVar[tuple[tuple[str, ...], ...]] = (("command", "command_template"),)

    def __init__(self, command: str | list[str], *, name: str = "command",
                 cwd: Path | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 env: dict[str, str] | None = None, shown: str | None = None,
                 scrub: Callable[[str], str] | None = None) -> None:
        if isinstance(command, list) and (not command or not all(
                isinstance(a, str) for a in command)):
            raise ConfigError(f"target {name!r}: command must be a non-empty list of strings",
                              code="invalid_target")
        if isinstance(command, str) and not command.strip():
            raise ConfigError(f"target {name!r}: command is empty", code="invalid_target")
        self.command = command
        self.name = name
        self.cwd = cwd
        self.timeout_s = timeout_s
        self.env = env or {}
        self.shown = shown or (command if isinstance(command, str) else shlex.join(command))
        self.scrub = scrub or (lambda text: text)

    @classmethod
    def from_config(cls, config: TargetConfig, base_dir: Path, engine: object = None
                    ) -> CommandTarget:
        command = config.get("command", config.get("command_template"))
        written = config.written.get("command", config.written.get("command_template"))
        cwd = config.get("cwd")
        timeout = config.get("timeout_s", config.get("timeout_seconds", DEFAULT_TIMEOUT_S))
        env = {str(k): str(v) for k, v in (config.get("env") or {}).items()}
        return cls(command, name=config.name,
                   cwd=(base_dir / cwd) if cwd else base_dir, timeout_s=float(timeout),
                   env=env, scrub=config.scrub, shown=written if isinstance(written, str)
                   else shlex.join(str(a) for a in written or []))

    async def preflight(self) -> None:
        if self.cwd is not None and not self.cwd.is_dir():
            raise ConfigError(f"target {self.name!r}: cwd {self.cwd} is not a directory",
                              code="invalid_target")
        if isinstance(self.command, list) and not _findable(self.command[0], self.cwd):
            raise ConfigError(f"target {self.name!r}: command {self.command[0]!r} not found",
                              code="invalid_target")

    def argv(self, case: Case) -> tuple[list[str], bytes | None]:
        """The argv for a case, and what goes to stdin (None when the input is in argv)."""
        values = {"{input}": input_text(case.input), "{PROMPT}": case.question()}
        if isinstance(self.command, str):
            used = any(p in self.command for p in PLACEHOLDERS)
            script = self.command
            for placeholder, value in values.items():
                script = script.replace(placeholder, shlex.quote(value))
            argv = ["sh", "-c", script]
        else:
            used = any(p in a for a in self.command for p in PLACEHOLDERS)
            argv = []
            for arg in self.command:
                for placeholder, value in values.items():
                    arg = arg.replace(placeholder, value)
                argv.append(arg)
        return argv, None if used else values["{input}"].encode()

    async def run(self, case: Case) -> Execution:
        argv, stdin = self.argv(case)
        started = time.perf_counter()
        try:
            process = await asyncio.create_subprocess_exec(
                *argv, cwd=self.cwd, env={**os.environ, **self.env},
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                start_new_session=hasattr(os, "killpg"))
        except OSError as exc:
            return Execution(input=case.input, latency_ms=elapsed_ms(started),
                             error=f"command {self.shown!r} could not start: {exc.strerror or exc}")
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(stdin), self.timeout_s)
        except TimeoutError:
            _kill(process)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.communicate(), 5.0)
            return Execution(input=case.input, latency_ms=elapsed_ms(started),
                             error=f"command timed out after {self.timeout_s:g}s and was killed")
        except asyncio.CancelledError:
            _kill(process)
            raise
        latency = elapsed_ms(started)
        if process.returncode != 0:
            tail = stderr.decode("utf-8", "replace").strip()[-STDERR_TAIL:]
            return Execution(input=case.input, latency_ms=latency, error=self.scrub(
                f"command exited with status {process.returncode}; "
                f"stderr: {tail or '<empty>'}"))
        return Execution(input=case.input, latency_ms=latency,
                         output=parse_output(stdout.decode("utf-8", "replace")))


def _findable(program: str, cwd: Path | None) -> bool:
    """True when ``program`` names a file (relative to ``cwd``) or a command on PATH."""
    if os.sep in program or (os.altsep and os.altsep in program):
        return ((cwd or Path.cwd()) / program).exists()
    return shutil.which(program) is not None


def _kill(process: asyncio.subprocess.Process) -> None:
    """Kill the process and what it started (``sh -c`` leaves children behind)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            process.kill()
