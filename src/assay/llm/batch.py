"""Judge calls through the providers' batch APIs: what the engine collects instead of calling,
and the one interface a provider's batch API implements.

A run with ``batch`` (``assay run --batch``) gives its engine a :class:`BatchBook`. A judge
call made while a judge scores a case (the runner sets :data:`BATCH_SLOT` to that case, repeat
and evaluator) is then not sent: an answer the response cache holds is given as always; an
answer a finished batch holds is given as if the call had been made (validated by the judge,
then cached under the same key, so a re-run is free); a request whose batch failed it is sent
the ordinary way; anything else is collected (:meth:`BatchBook.collect`) and the call raises
:class:`BatchPending`, which the runner turns into "this case waits", never into a score.
Calls made outside a judge (the agent, a simulated user, cause analysis) are sent as usual.

Batched calls are priced at :data:`BATCH_PRICE_FACTOR` of the provider's price: OpenAI's Batch
API and Anthropic's Message Batches both bill half.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import orjson

from assay.llm.types import ChatRequest, ChatResponse, ProviderError, RequestRejected

BATCH_PRICE_FACTOR = 0.5
"""What a batched call costs against the same call made live (both providers: half)."""

Slot = tuple[str, int, str]
"""(case id, repeat, evaluator name): whose judgement a collected request is for."""

BATCH_SLOT: ContextVar[Slot | None] = ContextVar("assay_batch_slot", default=None)
"""The judgement the current judge call belongs to; None outside a judge (then nothing is
collected)."""


class BatchPending(ProviderError):
    """The call was collected for a batch, not made: its judgement waits for the batch."""

    code = "batch_pending"


class NoBatchListing(RequestRejected):
    """The server answered HTTP 404 or 405 to the listing of its batches: a submission whose
    batch id was never kept cannot be looked for there (an OpenAI-compatible server that
    serves batches but does not list them)."""

    code = "batch_listing_unavailable"

    def __init__(self, url: str, status: int) -> None:
        super().__init__(f"{url} answered HTTP {status} to the listing of batches",
                         status=status)
        self.url = url
        """The listing's URL, its credentials hidden."""


class InputFileGone(RequestRejected):
    """The provider no longer has the uploaded file a batch was to be made of (HTTP 404):
    its requests must be uploaded again."""

    code = "batch_input_file_gone"


@dataclass(frozen=True, slots=True)
class BatchLimits:
    """What one batch of a provider may hold."""

    requests: int
    bytes: int


@dataclass(slots=True)
class BatchStatus:
    """A submitted batch as its provider reports it. ``done``: it will change no more (its
    results, if any, can be read); ``counts``: the provider's request counts."""

    batch_id: str
    state: str
    done: bool
    counts: dict[str, int] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)
    """What reading the results needs (OpenAI's file ids, Anthropic's results URL)."""


@dataclass(frozen=True, slots=True)
class Lookup:
    """What a provider says of a submission whose batch id was never kept: ``batch_id`` when
    one of its batches is verifiably that submission; else ``unsure``, the ids of batches
    that may be it but cannot be told yet (an Anthropic batch still running: only its
    results' custom ids tell); neither: the provider never took it."""

    batch_id: str | None = None
    unsure: tuple[str, ...] = ()


@dataclass(slots=True)
class BatchAnswer:
    """One request's outcome: an OpenAI-shaped response, or why there is none. A results
    line that names no request (not JSON, not an object, no ``custom_id``) is an answer
    without a custom id, its error saying which line and what was wrong."""

    custom_id: str | None
    response: ChatResponse | None = None
    error: str | None = None


class BatchAPI(ABC):
    """A provider's batch API: entries in, a batch id out; its status; its answers."""

    limits: BatchLimits
    ended: frozenset[str]
    """The provider's states of a batch that will change no more."""
    states: frozenset[str]
    """Every state the provider gives a batch: one that is none of them cannot be told to
    end, so a run does not wait for it."""

    @abstractmethod
    def entry(self, custom_id: str, request: ChatRequest) -> dict[str, Any]:
        """One request of a batch, in the provider's shape."""

    def entry_bytes(self, entry: dict[str, Any]) -> int:
        """How much of the provider's size limit ``entry`` takes: its JSON line."""
        return len(orjson.dumps(entry)) + 1

    async def upload(self, entries: list[dict[str, Any]], token: str,
                     timeout: float) -> str | None:
        """Upload ``entries`` where the provider takes a batch's requests from a file made
        first (OpenAI's Files API): the file's id, which the caller keeps before
        :meth:`submit` makes the batch of it. None (no request made) where the requests go
        with the batch itself (Anthropic)."""
        return None

    @abstractmethod
    async def submit(self, entries: list[dict[str, Any]], token: str, timeout: float,
                     input_file: str | None = None) -> str:
        """Submit one batch (within :attr:`limits`) marked with assay's ``token`` where the
        provider keeps one; return its id. ``input_file``: the file :meth:`upload` made of
        the entries, which the batch is made of (``entries`` are then not sent: ``[]`` will
        do); :class:`InputFileGone` when the provider no longer has it."""

    def files(self, status: BatchStatus) -> list[str]:
        """The files at the provider that hold a finished batch's answers (OpenAI's output
        and error files), deleted once the run is judged from them; none by default."""
        return []

    async def delete_file(self, file_id: str, timeout: float) -> None:
        """Delete a file this API made or named (:meth:`upload`, :meth:`files`) at the
        provider; a file already gone is deleted. An API that keeps no files (Anthropic's
        Message Batches take their requests in the body) names none, so has none to delete."""
        return None

    @abstractmethod
    async def find(self, token: str, custom_ids: frozenset[str], since: float,
                   timeout: float) -> Lookup:
        """Look for the batch of a submission whose id was never kept: made with ``token``
        and holding exactly ``custom_ids``, created no earlier than ``since`` (a Unix time,
        less a margin for clocks that differ)."""

    @abstractmethod
    async def cancel(self, batch_id: str, timeout: float) -> BatchStatus:
        """Ask the provider to cancel the batch (the requests it has not run yet are not
        billed); its status after the request."""

    @abstractmethod
    async def status(self, batch_id: str, timeout: float) -> BatchStatus:
        """The batch's status now."""

    @abstractmethod
    def answers(self, status: BatchStatus, timeout: float) -> AsyncIterator[BatchAnswer]:
        """The answers of a finished batch as its results are read, a line at a time (a
        request it has no line for is not in them): a results file may be a gigabyte, and
        is never held whole."""

    async def results(self, status: BatchStatus, timeout: float) -> list[BatchAnswer]:
        """Every answer of a finished batch (see :meth:`answers`)."""
        return [found async for found in self.answers(status, timeout)]


@dataclass(slots=True)
class Collected:
    """A request collected for a batch, and every judgement waiting for it."""

    model: str
    key: str
    request: ChatRequest
    slots: list[Slot] = field(default_factory=list)


class BatchBook:
    """What a batch run's engine knows this pass: answers of finished batches (by cache
    key), requests to send live (their batch failed them), and what it collected."""

    def __init__(self) -> None:
        self.answers: dict[str, ChatResponse] = {}
        self.failed: dict[str, str] = {}
        """Cache key -> why its batch gave no answer: sent the ordinary way."""
        self.collected: dict[str, Collected] = {}
        self._waiting: set[Slot] = set()
        self.answered = 0
        """Answers taken from batches this pass."""
        self.problems: list[str] = []
        """What was wrong with the batches' results as read this pass (a line that names
        no request, an answer for a request never sent), for the run's notes."""

    def take(self, key: str) -> ChatResponse | None:
        """A finished batch's answer for ``key`` (to every judgement that asks for it: the
        same request of two evaluators was sent once)."""
        found = self.answers.get(key)
        if found is not None:
            self.answered += 1
        return found

    def collect(self, slot: Slot, model: str, key: str, request: ChatRequest) -> None:
        """Keep ``request`` for the next batch; the same request asked twice is sent once."""
        found = self.collected.get(key)
        if found is None:
            found = self.collected[key] = Collected(model, key, request)
        found.slots.append(slot)
        self._waiting.add(slot)

    def waits(self, case_id: str, repeat: int, evaluator: str) -> bool:
        """Whether that judgement waits for a batch (a request of it was collected)."""
        return (case_id, repeat, evaluator) in self._waiting

    def submitted(self) -> None:
        """The collected requests are in batches now: start the next pass empty."""
        self.collected.clear()
        self._waiting.clear()


__all__ = ["BATCH_PRICE_FACTOR", "BATCH_SLOT", "BatchAPI", "BatchAnswer", "BatchBook",
           "BatchLimits", "BatchPending", "BatchStatus", "Collected", "InputFileGone", "Lookup",
           "NoBatchListing", "Slot"]
