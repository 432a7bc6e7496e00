"""Run the ``assay`` command as a process of its own, without paying its start-up each time.

Some two hundred tests run the real command: its exit code, what it prints, the files it
leaves. Started as ``python -m assay`` each paid 0.6-0.7 s of interpreter start-up and library
imports, most of the in-process test run's time. Here a server process imports the command and
its libraries once, per test worker, and forks a child for each command: a real process with
its own working directory, environment, standard streams, exit code and signals, running the
command's own entry point (``assay.__main__.main``), as ``python -m assay`` does.

What a fork cannot reproduce stays with ``subprocess``: what the command imports at start-up,
entry points of packages installed for one test, interpreter options and the ``PYTHON*``
variables read at start-up (``PYTHONPATH`` aside, which the child applies to its path),
several commands at once, and signals sent while a command runs.

The server is ``python -m tests.assay_process`` and speaks one JSON line per command on its
standard input and output: the request (arguments, working directory, environment, the files
for the child's output), then the child's pid, then its exit status.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

PRELOAD = (
    "assay.cli",
    "assay.run.evaluate",
    "assay.run.result",
    "assay.store.runs",
    "assay.llm.providers.openai_http",
    "assay.judges.llm.llm_judge",
    "assay.suites.evalyaml",
    "assay.report.terminal",
    "assay.store.schema",
    "sqlalchemy.dialects.sqlite",
    "aiohttp",
    "scipy.stats",
    "assay.judges.catalog",
    "assay.judges.deterministic",
    "assay.judges.deterministic.assertions",
    "assay.judges.deterministic.match",
    "assay.judges.deterministic.confusion",
    "assay.judges.feedback",
    "assay.judges.code.python_scorer",
    "assay.traces.summary",
    "assay.run.policies.catalog",
    "assay.run.policies.default",
    "assay.run.policies.dimensions",
    "assay.run.policies.databricks",
    "assay.suites.formats",
    "assay.suites.paths",
    "assay.judges.llm.semantic_similarity",
    "assay.store.baselines",
    "assay.targets.chat_model",
    "rich._emoji_codes",
    "assay.suites.agentv4",
    "assay.suites.dataset",
    "assay.suites.evaljsonl",
    "assay.suites.simulation",
    "assay.targets.callable",
    "assay.targets.recorded",
    "assay.targets.mocked",
    "assay.report.outputs",
    "assay.report.files",
    "assay.report.reporters",
    "assay.judges.code",
    "typer._adapters",
    "xml.etree.ElementTree",
)
"""What the server imports before forking: the command and what most commands use (SciPy's
statistics, which calibrate, align and compare import, took most of a second in each; the
store's SQLAlchemy a quarter of one in each command that opens a store; the suite formats,
judges, scoring policies and outputs a run loads, 20-40 ms of each run)."""

_ROOT = Path(__file__).resolve().parent.parent


def run_assay(args: Sequence[str], *, cwd: str | Path | None = None,
              env: Mapping[str, str] | None = None,
              timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
    text=True, ...)``, forked from a process that has the command imported already.

    ``env`` None passes this process's environment as it is now; standard input is empty.
    On ``timeout`` the command is killed and :class:`subprocess.TimeoutExpired` raised, as
    ``subprocess.run`` does."""
    argv = [str(a) for a in args]
    with tempfile.TemporaryDirectory(prefix="assay-cmd-") as tmp:
        streams = {name: os.path.join(tmp, name) for name in ("stdout", "stderr")}
        request = {"argv": argv, "cwd": str(Path(cwd or os.getcwd()).resolve()),
                   "env": dict(os.environ if env is None else env), **streams}
        code = _server().call(request, timeout, argv)
        out = Path(streams["stdout"]).read_text(encoding="utf-8")
        err = Path(streams["stderr"]).read_text(encoding="utf-8")
    return subprocess.CompletedProcess([sys.executable, "-m", "assay", *argv], code, out, err)


class _Server:
    """The forking server of this test process, started on first use."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.assay_process"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, cwd=_ROOT, env=env)
        self.lock = threading.Lock()
        self.pending = b""
        atexit.register(self.close)

    def call(self, request: dict[str, Any], timeout: float | None,
             argv: list[str]) -> int:
        with self.lock:
            stdin = self.process.stdin
            assert stdin is not None
            stdin.write(json.dumps(request).encode() + b"\n")
            stdin.flush()
            pid = int(self._reply(None)["pid"])
            try:
                return int(self._reply(timeout)["returncode"])
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                self._reply(None)
                raise subprocess.TimeoutExpired(["assay", *argv], timeout or 0) from None

    def _reply(self, timeout: float | None) -> dict[str, Any]:
        """The server's next line. Read from the descriptor, not a buffered reader: the pid
        and the exit status often come in one read, and a buffered line would not wake
        ``select``."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], left)[0]:
                raise subprocess.TimeoutExpired("assay", timeout or 0)
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError(f"the assay command server ended ({self.process.wait()})")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return dict(json.loads(line))

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait(timeout=30)


_SERVER: _Server | None = None


def _server() -> _Server:
    global _SERVER
    if _SERVER is None or _SERVER.process.poll() is not None:
        _SERVER = _Server()
    return _SERVER


# -- the server side ------------------------------------------------------------------------


def serve() -> None:
    """Import the command once, then fork a child for each request on standard input."""
    import gc
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    _build_deferred_models()
    gc.collect()
    gc.freeze()  # children do not walk (and so do not copy) what is shared
    # The control channel moves off fds 0 and 1, which become the children's streams.
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    base_path = sys.path[1:]
    for line in requests:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            requests.close()
            replies.close()
            _child(request, base_path)
        replies.write(json.dumps({"pid": pid}).encode() + b"\n")
        replies.flush()
        _, status = os.waitpid(pid, 0)
        replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode()
                      + b"\n")
        replies.flush()


def _build_deferred_models() -> None:
    """Build the pydantic models that assay defers to their first use (``defer_build``), so
    that each command does not build again the ones it uses (15-25 ms of each run). A model
    whose annotations cannot be resolved yet is left to be built where it is used, as in a
    fresh process."""
    from pydantic import BaseModel, PydanticUserError

    models: list[type[BaseModel]] = []
    pending = list(BaseModel.__subclasses__())
    while pending:
        model = pending.pop()
        models.append(model)
        pending.extend(model.__subclasses__())
    for model in models:
        if model.__module__.startswith("assay.") and not model.__pydantic_complete__:
            with contextlib.suppress(PydanticUserError, NameError):
                model.model_rebuild()


def _child(request: dict[str, Any], base_path: list[str]) -> None:
    """Become ``python -m assay ARGV`` in the request's directory and environment."""
    code: object = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        written = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                                (1, request["stdout"], written), (2, request["stderr"], written)):
            opened = os.open(path, flags, 0o600)
            os.dup2(opened, fd)
            os.close(opened)
        # ``python -m`` puts the working directory first on the path, then PYTHONPATH.
        extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:] = [request["cwd"], *extra, *base_path]
        import assay.__main__ as entry

        # As ``python -m assay`` sets them: the command's help names its program from these.
        sys.argv = [str(entry.__file__), *request["argv"]]
        sys.modules["__main__"] = entry
        _consoles_from_environment()
        entry.main()
        code = 0
    except SystemExit as done:
        code = done.code
    except BaseException:
        traceback.print_exc()
        code = 1
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code or 0)


def _consoles_from_environment() -> None:
    """The command's consoles, built at import, read their width and colour settings
    (``COLUMNS``, ``NO_COLOR``...) from the environment then: build them again from this
    child's environment, as a fresh process would have."""
    import importlib

    from rich.console import Console

    from assay.report.safe_text import make_console

    for value in vars(importlib.import_module("assay.cli.app")).values():
        if isinstance(value, Console):
            value.__dict__.update(make_console(stderr=value.stderr).__dict__)


if __name__ == "__main__":
    serve()
