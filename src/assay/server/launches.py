"""Runs started through the API: ``POST /runs``, their progress as server-sent events,
cancel, and ``POST /runs/{id}/resume`` (what ``assay run --resume`` does).

A run is :func:`assay.evaluate_async` in a task of the server's event loop, with its own
:class:`RunStore` (the server's reading store never holds queued rows). Its progress is a list
of events kept for the run's life, so a client that connects late, or reconnects, reads it from
the start; event names follow Connexity's stream: ``run_started``, ``test_case_started``,
``test_case_completed`` (``overall_score`` on 0-100, as Connexity's), ``run_completed``,
``run_cancelled``, ``run_failed``, and ``run_waiting`` for a batch run left waiting for its
batches (a resume collects them). Cancelling the task marks the run
interrupted, as Ctrl-C does for ``assay run``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, Strict, field_validator

from assay._util.case_filter import case_filter_problem
from assay._util.control_chars import quoted
from assay._util.redact import scrub, scrub_json
from assay.errors import EvaluationError
from assay.types import numbers
from assay.types.records import CaseRecord, RunRecord, RunStatus, Verdict, case_overall

if TYPE_CHECKING:
    from assay.run.result import EvaluationResult
    from assay.store.runs import RunStore

TERMINAL_EVENTS = ("run_completed", "run_cancelled", "run_failed", "run_waiting")
START_TIMEOUT_S = 120.0
"""How long ``POST /runs`` waits for the run to be created (the suite loaded and checked)."""


NO_CONTROL_CHARACTERS = r"^[^\x00-\x1f\x7f]*$"
"""Names and paths hold no control characters (a NUL cannot be in a path at all)."""


def json_number(value: Any) -> Any:
    """A JSON number only: ``true`` and ``"8"`` are not 1 and 8."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise ValueError("must be a whole number, not " + type(value).__name__)
    return value


WholeNumber = Annotated[int, Strict(False)]
"""An integer in a strict request body that may be written ``8.0``, as JSON Schema allows;
its model refuses ``true`` and ``"8"`` with :func:`json_number` (a validator in the type
would hide its bounds from the OpenAPI document)."""


class RunRequest(BaseModel):
    """A run to start: a suite the server may read, and what ``assay run`` would be told.

    Strict, as every request body is: ``"8"`` is not a number, nor ``1`` a boolean."""

    model_config = ConfigDict(extra="forbid", strict=True)

    suite: str = Field(description="a suite path, relative to one of the server's suite roots",
                       min_length=1, max_length=1000, pattern=NO_CONTROL_CHARACTERS)
    target: str | None = Field(
        default=None, max_length=500, pattern=NO_CONTROL_CHARACTERS,
        description="a target of the server's targets file, by name (never a model string)")
    judge_model: str | None = Field(
        default=None, max_length=500, pattern=NO_CONTROL_CHARACTERS,
        description="one of the judge models the server allows (assay serve "
        "--allow-judge-model) or its default judge")
    concurrency: WholeNumber | None = Field(default=None, ge=1, le=256)
    repeat: WholeNumber | None = Field(default=None, ge=1, le=100)
    filter: str | None = Field(
        default=None, max_length=500, pattern=NO_CONTROL_CHARACTERS,
        description="only case ids matching this glob, as assay run --filter (*, ?, [a-z]; "
        "[[] for a literal [): a '[' left open or a backwards range is a 400")
    batch: bool | None = Field(
        default=None, description="send the judge calls through the providers' batch APIs at "
        "half the price (assay run --batch): the run is left waiting for batch (its stream "
        "ends with run_waiting) and POST /runs/{run_id}/resume collects the answers; None: "
        "the suite's execution.batch, else false")

    _numbers = field_validator("concurrency", "repeat", mode="before")(json_number)

    @field_validator("filter")
    @classmethod
    def _a_glob(cls, value: str | None) -> str | None:
        """The check ``assay run --filter`` gives it too: a pattern that cannot select what
        it says is refused before a run starts."""
        problem = None if value is None else case_filter_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value


class LaunchRefused(Exception):
    """A run request the server will not start; ``status`` is the HTTP status."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def _shown(value: str) -> str:
    """A value from a request as an error message quotes it: credentials in a URL hidden,
    cut short, anything but printable ASCII escaped (:func:`quoted`)."""
    from assay.llm.models import display_model

    return quoted(display_model(value))


@dataclass(frozen=True)
class LaunchPolicy:
    """What a run request may choose besides its suite: only what the server was started
    with. A request that could name any model string or URL as its judge or target would
    have the server send its own API keys (``ASSAY_API_KEY``, ``OPENAI_API_KEY``...) to a
    host of the request's choosing with every case."""

    judge_models: frozenset[str]
    """The judge models a request may name: the server's allow-list and its default."""
    targets_file: Path | None = None
    """The server's targets file (``assay serve --targets``); None: the one found above the
    suite, as ``assay run`` finds it (a file on the server's disk either way)."""

    def check(self, request: RunRequest, suite: Path) -> None:
        """Raise :class:`LaunchRefused` (403) for a judge model or target not allowed."""
        self._check_choices(request.judge_model, request.target, suite)

    def check_resume(self, run: RunRecord, roots: list[Path]) -> str | None:
        """Raise :class:`LaunchRefused` unless this server could have started ``run``: its
        suite under the roots, its judge, target and targets file the server's, since a
        resume runs what the run recorded. Returns the judge model to resume with: the
        server's own entry for the recorded judge, since a run records a judge URL without
        its password and the server's entry still has it."""
        snapshot = run.config
        if not snapshot.suite_path:
            raise LaunchRefused(409, "not_resumable", f"run {run.id} has no suite file to run "
                                "again; resume it where it was made")
        suite = suite_under(snapshot.suite_path, roots)
        recorded = snapshot.run.targets_file
        if (Path(recorded).resolve() if recorded else None) != \
                (self.targets_file.resolve() if self.targets_file else None):
            raise LaunchRefused(403, "targets_file_not_allowed",
                                f"run {run.id} was started with targets file "
                                f"{_shown(recorded or 'found beside its suite')}; this server "
                                "resumes only runs of its own targets file "
                                f"({_shown(str(self.targets_file or 'found beside the suite'))})")
        judge = snapshot.run.judge_model
        if judge is not None and judge not in self.judge_models:
            from assay.llm.models import display_model

            judge = next((m for m in sorted(self.judge_models) if display_model(m) == judge),
                         judge)
        self._check_choices(judge, snapshot.target_override, suite)
        return judge

    def _check_choices(self, judge_model: str | None, target: str | None,
                       suite: Path) -> None:
        if judge_model is not None and judge_model not in self.judge_models:
            allowed = ", ".join(sorted(_shown(m) for m in self.judge_models))
            raise LaunchRefused(403, "judge_model_not_allowed",
                                f"judge_model {_shown(judge_model)} is not one this "
                                f"server allows; allowed: {allowed} (assay serve "
                                "--allow-judge-model MODEL adds one)")
        if target is not None:
            self._check_target(target, suite)

    def _check_target(self, target: str, suite: Path) -> None:
        from assay.targets.config import load_targets_for

        try:
            found = load_targets_for(suite, self.targets_file, strict=False)
        except EvaluationError as exc:
            raise LaunchRefused(400, exc.code, exc.message) from None
        names = found.names() if found is not None else []
        if target not in names:
            where = f"the server's targets file {found.path}" if found is not None else \
                "a targets file: this server has none for this suite (assay serve --targets)"
            raise LaunchRefused(403, "target_not_allowed",
                                f"target {_shown(target)} is not defined in {where}; a run "
                                "request may name only those targets "
                                f"({', '.join(repr(n) for n in names) or 'none'}), never a "
                                "model string or URL")

    def options(self) -> dict[str, Any]:
        """What every run this server starts is given (``evaluate``'s RunConfig fields)."""
        return {} if self.targets_file is None else {"targets_file": str(self.targets_file)}


@dataclass
class Launch:
    run_id: str
    task: asyncio.Task[Any] | None = None
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    total: int = 0
    done: int = 0
    started: float = field(default_factory=time.monotonic)
    """When its cases started (for the time left)."""
    resumed_from: int = 0
    """Cases done before it started here (a resumed run's), left out of its pace."""

    def emit(self, name: str, data: dict[str, Any]) -> None:
        self.events.append((name, {"run_id": self.run_id, "time": time.time(), **data}))
        self.changed.set()
        self.changed = asyncio.Event()

    @property
    def finished(self) -> bool:
        return bool(self.events) and self.events[-1][0] in TERMINAL_EVENTS


class _Progress:
    """The runner's progress, as events."""

    def __init__(self, launch: Launch) -> None:
        self.launch = launch

    def start(self, total: int, done: int, label: str = "") -> None:
        self.launch.total, self.launch.done = total, done
        self.launch.started, self.launch.resumed_from = time.monotonic(), done
        self.launch.emit("run_started", {"total_count": total, "completed_count": done,
                                         "progress_text": progress_text(done, total, None)})

    def case_started(self, case_id: str, repeat: int) -> None:
        launch = self.launch
        launch.emit("test_case_started", {
            "case_id": case_id, "repeat": repeat, "completed_count": launch.done,
            "total_count": launch.total})

    def advance(self, record: CaseRecord) -> None:
        launch = self.launch
        launch.done += 1
        finished_here = launch.done - launch.resumed_from
        eta = None if not finished_here or launch.total <= 0 else (
            (time.monotonic() - launch.started) / finished_here
            * max(0, launch.total - launch.done))
        launch.emit("test_case_completed", {
            "case_id": record.case_id, "repeat": record.repeat,
            "completed_count": launch.done, "total_count": launch.total,
            "passed": record.verdict is Verdict.PASS, "verdict": record.verdict.value,
            "overall_score": case_overall(record), "score": record.score,
            "error_message": record.execution.error,
            "eta_s": eta, "progress_text": progress_text(launch.done, launch.total, eta)})


def _ended(result: EvaluationResult) -> tuple[str, dict[str, Any]]:
    """The last event of a run that returned: waiting for its batches, or completed."""
    if result.waiting:
        batches = result.batch.batches if result.batch is not None else []
        return "run_waiting", {
            "status": RunStatus.WAITING.value,
            "submitted": result.batch.submitted if result.batch is not None else 0,
            "batches": [{"batch_id": b.batch_id, "model": b.model, "requests": b.requests,
                         "state": b.state, "counts": b.counts} for b in batches]}
    summary = result.summary
    return "run_completed", {
        "status": RunStatus.COMPLETED.value, "passed": summary.passed,
        "pass_rate": summary.pass_rate, "mean_score": summary.mean_score,
        "gate_failures": summary.gate_failures}


def progress_text(done: int, total: int | None, eta_s: float | None) -> str:
    """A run's progress in words: ``12 of 40 cases (30.0%), about 3.2 s left``."""
    if not total:
        return f"{numbers.count(done)} case(s) done"
    text = f"{numbers.count(done)} of {numbers.count(total)} cases ({numbers.percent(done / total)})"
    return text + (f", about {numbers.milliseconds(eta_s * 1000)} left" if eta_s else "")


def resolve_suite(request: RunRequest, roots: list[Path]) -> Path:
    """The suite's path inside one of ``roots``; LaunchRefused for any other path."""
    return suite_under(request.suite, roots)


def suite_under(suite: str, roots: list[Path]) -> Path:
    """``suite`` (relative to a root, or absolute) as a path inside one of ``roots``;
    LaunchRefused for any other path."""
    given = Path(suite)
    for root in roots:
        candidate = _inside(root.resolve(), given)
        if candidate is not None:
            return candidate
    raise LaunchRefused(404, "unknown_suite",
                        f"no suite {quoted(suite)} under the server's suite root(s); give a "
                        "path relative to a root (assay serve --suites DIR)")


def _inside(base: Path, given: Path) -> Path | None:
    """``given`` resolved against ``base`` when it is an existing path inside it; None for
    any other, and for a path the system cannot look up: a symlink loop (a RuntimeError of
    ``resolve`` before Python 3.13), a name longer than the system takes, a NUL (OSError or
    ValueError of ``exists``). A request names such a path as easily as any other, so it
    is a suite that is not there, never the server's failure."""
    try:
        candidate = (base / given).resolve()
        if candidate != base and base not in candidate.parents:
            return None
        return candidate if candidate.exists() else None
    except (OSError, ValueError, RuntimeError):
        return None


class Launcher:
    """The runs this server started, by id."""

    def __init__(self, store_url: str, roots: list[Path], policy: LaunchPolicy) -> None:
        self.store_url = store_url
        self.roots = roots
        self.policy = policy
        self.launches: dict[str, Launch] = {}

    async def start(self, request: RunRequest) -> Launch:
        """A new run of the request's suite (:func:`assay.evaluate_async`)."""
        from assay.run.evaluate import evaluate_async

        path = resolve_suite(request, self.roots)
        self.policy.check(request, path)
        options = {**self.policy.options(), **{k: v for k, v in request.model_dump(
            exclude={"suite", "target"}).items() if v is not None}}
        return await self._launch(lambda store, progress, on_start: evaluate_async(
            path, target=request.target, store=store, progress=progress, on_start=on_start,
            keep=False, **options))

    async def resume(self, run: RunRecord) -> Launch:
        """A stored run resumed as ``assay run --resume`` resumes it
        (:func:`assay.resume_async`): a batch run's batches checked, collected once done."""
        from assay.run.evaluate import resume_async

        judge = self.policy.check_resume(run, self.roots)
        return await self._launch(lambda store, progress, on_start: resume_async(
            run.id, store=store, progress=progress, on_start=on_start, keep=False,
            judge_model=judge if judge != run.config.run.judge_model else None))

    async def _launch(self, make: Callable[[RunStore, Any, Callable[[RunRecord], None]],
                                           Coroutine[Any, Any, EvaluationResult]]) -> Launch:
        """The run ``make`` starts, in a task with its own store, its progress as events;
        returned once the run is stored (its suite loaded and checked)."""
        from assay.store.runs import RunStore

        created: asyncio.Future[RunRecord] = asyncio.get_running_loop().create_future()
        holder: dict[str, Launch] = {}

        def on_start(run: RunRecord) -> None:
            launch = holder["launch"] = self.launches[run.id] = Launch(run.id)
            launch.emit("run_created", {"suite": run.suite})
            if not created.done():
                created.set_result(run)

        class _Relay:
            def start(self, total: int, done: int, label: str = "") -> None:
                if "launch" in holder:
                    _Progress(holder["launch"]).start(total, done, label)

            def case_started(self, case_id: str, repeat: int) -> None:
                if "launch" in holder:
                    _Progress(holder["launch"]).case_started(case_id, repeat)

            def advance(self, record: CaseRecord) -> None:
                if "launch" in holder:
                    _Progress(holder["launch"]).advance(record)

        async def execute() -> None:
            store = RunStore(self.store_url)
            try:
                result = await make(store, _Relay(), on_start)
                if not created.done():
                    created.set_exception(LaunchRefused(500, "run_failed", "no run was made"))
                self._finish(*_ended(result), holder)
            except asyncio.CancelledError:
                self._finish("run_cancelled", {"status": RunStatus.INTERRUPTED.value}, holder)
                raise
            except EvaluationError as exc:
                if not created.done():
                    created.set_exception(LaunchRefused(400, exc.code, exc.message))
                self._finish("run_failed", {"status": RunStatus.FAILED.value,
                                            "error_message": exc.message}, holder)
            except Exception as exc:  # the run's own failure, reported on its stream
                message = scrub(f"{type(exc).__name__}: {exc}")
                if not created.done():
                    created.set_exception(LaunchRefused(500, "run_failed", message))
                self._finish("run_failed", {"status": RunStatus.FAILED.value,
                                            "error_message": message}, holder)
            finally:
                with contextlib.suppress(Exception):
                    store.close()

        task = asyncio.get_running_loop().create_task(execute())
        try:
            run = await asyncio.wait_for(asyncio.shield(created), START_TIMEOUT_S)
        except TimeoutError:
            task.cancel()
            raise LaunchRefused(504, "start_timeout", "the run did not start within "
                                f"{START_TIMEOUT_S:.0f}s") from None
        launch = self.launches[run.id]
        launch.task = task
        return launch

    @staticmethod
    def _finish(name: str, data: dict[str, Any], holder: dict[str, Launch]) -> None:
        launch = holder.get("launch")
        if launch is not None:
            launch.emit(name, {"completed_count": launch.done, "total_count": launch.total,
                               **data})

    def running(self, run_id: str) -> bool:
        launch = self.launches.get(run_id)
        return launch is not None and not launch.finished

    async def cancel(self, run_id: str) -> bool:
        """Cancel a run this server started; False when it is not running here."""
        launch = self.launches.get(run_id)
        if launch is None or launch.finished or launch.task is None:
            return False
        launch.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await launch.task
        return True

    async def aclose(self) -> None:
        for run_id in list(self.launches):
            await self.cancel(run_id)


def sse(name: str, data: dict[str, Any]) -> bytes:
    """One server-sent event (JSON never holds a raw newline, so one data line), known
    secrets hidden (see :mod:`assay._util.redact`)."""
    return f"event: {name}\ndata: {scrub_json(json.dumps(data, default=str))}\n\n".encode()


async def stream(launch: Launch, keepalive_s: float = 15.0) -> AsyncIterator[bytes]:
    """Every event of a launched run from the first, then new ones until it ends."""
    sent = 0
    while True:
        while sent < len(launch.events):
            yield sse(*launch.events[sent])
            sent += 1
        if launch.finished:
            return
        waiter = launch.changed
        try:
            await asyncio.wait_for(waiter.wait(), keepalive_s)
        except TimeoutError:
            yield b": keep-alive\n\n"
