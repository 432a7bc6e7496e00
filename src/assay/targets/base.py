"""A target runs the agent under test for one case and reports what it did.

Targets turn a :class:`Case` into an :class:`Execution`. A target that fails for a case
returns an execution with ``error`` set (the runner then records error scores for that case),
so one failing call never stops a run.
"""

from __future__ import annotations

import contextlib
import contextvars
from abc import ABC, abstractmethod
from collections.abc import Iterator

from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.messages import Message

_SAMPLE: contextvars.ContextVar[int] = contextvars.ContextVar("assay_sample", default=0)


@contextlib.contextmanager
def sampling(index: int) -> Iterator[None]:
    """Mark the target calls inside as sample ``index`` of a case (its repeat), so that a
    model-backed target draws a new answer for each repeat instead of a cached one."""
    token = _SAMPLE.set(index)
    try:
        yield
    finally:
        _SAMPLE.reset(token)


def current_sample() -> int:
    """The repeat index the running target call belongs to (0 outside a repeated run)."""
    return _SAMPLE.get()


class Target(ABC):
    """One way of running an agent; ``name`` is how suites and results refer to it."""

    name: str = "target"
    workers: int | None = None
    judge_target: str | None = None
    timeout_s: float | None = None
    """The target's own bound on one run, when it has one; a run's default agent timeout
    (600 s) never cuts a longer one short."""
    resources: dict[str, float] | None = None
    """What a worker running this target asks a Ray cluster for (``{"GPU": 1}``)."""
    measures_latency: bool = True
    """Whether the time a call takes is the agent's latency. Outputs recorded elsewhere
    have only the latency they recorded: replaying them takes no agent's time."""

    @abstractmethod
    async def run(self, case: Case) -> Execution:
        """Run the agent on ``case``; failures go in ``Execution.error``, not raised."""

    async def run_turn(self, case: Case, messages: list[Message], turn: int) -> Execution:
        """One agent turn of a conversation: the conversation so far in, the turn's assistant
        (and tool) messages out, in ``Execution.messages`` or as its output.

        By default the conversation becomes the input of :meth:`run`, so every target can
        hold a conversation: a Python function gets the message list (or the case, with
        ``metadata.turn_index``), an HTTP agent gets ``{"messages": [...]}``.
        """
        metadata = {**case.metadata, "turn_index": turn}
        return await self.run(case.model_copy(update={"input": list(messages),
                                                      "metadata": metadata}))

    async def preflight(self) -> None:
        """Fail before any case runs when the target cannot work."""

    async def aclose(self) -> None:
        """Release what the target holds (processes, sessions)."""


class WrappedTarget(Target):
    """A target that runs ``inner`` with something around it (mocking, a cluster's
    admission): it is ``inner`` by every setting a run reads of a target, and prepares and
    releases what ``inner`` holds."""

    def __init__(self, inner: Target) -> None:
        self.inner = inner
        self.name = inner.name
        self.workers = inner.workers
        self.judge_target = inner.judge_target
        self.timeout_s = inner.timeout_s
        self.measures_latency = inner.measures_latency
        self.resources = inner.resources

    async def preflight(self) -> None:
        await self.inner.preflight()

    async def aclose(self) -> None:
        await self.inner.aclose()


class RecordedOutput(Target):
    """The execution is the case's own recorded output: for judging outputs made elsewhere.

    A case with nothing recorded is an error (``no recorded output``), unless
    ``unanswered_is_missing``: then it is an execution without an answer, which judges that
    need one report as a missing input. That is how Databricks and MLflow read a row with no
    ``response`` when no agent is given, the same as a row whose ``response`` is null.
    """

    name = "recorded"
    measures_latency = False

    def __init__(self, outputs: dict[str, Execution] | None = None, *,
                 unanswered_is_missing: bool = False) -> None:
        self.outputs = outputs or {}
        self.unanswered_is_missing = unanswered_is_missing

    async def run(self, case: Case) -> Execution:
        if case.id in self.outputs:
            return self.outputs[case.id]
        recorded = case.metadata.get("output")
        if recorded is None:
            if self.unanswered_is_missing:
                return Execution(input=case.input)
            return Execution(input=case.input, error=f"no recorded output for case {case.id!r}")
        latency = case.metadata.get("latency_ms")
        if isinstance(latency, bool) or not isinstance(latency, int | float) or latency < 0:
            latency = None  # not recorded: unknown, never the time the replay took
        return Execution(input=case.input, output=recorded, latency_ms=latency)
