"""A run whose judge calls go through the providers' batch APIs (``assay run --batch``,
``assay.evaluate(..., batch=True)``): half the price, answers within a day.

One loop, :func:`judge_in_batches`, is what a batch run and every resume of it do:

1. the run's batches not collected yet are asked for their status; while one is not done,
   the run is left **waiting for batch** (``RunStatus.WAITING``; ``batch_wait`` asks again
   every ``batch_poll_s`` instead), nothing lost;
2. once all are done, the answers of every batch of the run (earlier rounds' too, since an
   answer a judge did not accept is never cached) are read into the engine's
   :class:`BatchBook`: each
   request's answer under the cache key a live call has (a request that errored, expired or
   was cancelled, that the results answer twice differently or not at all, or a whole batch
   that failed, is marked to be sent the ordinary way, and the completed run's notes say
   why; a results line that names no request the batch was sent is left out, and named);
   a batch in a state that is none of its provider's stops the resume, saying so;
3. the runner runs: the agent runs as usual (its executions stored), each judge asks the
   engine, which answers from the cache, from the book (the judge validates the answer as a
   live one, and the engine caches it under its key: a re-run is free), live for a failed
   request, or else collects the request; a case with a collected request is not scored
   (its other scores are stored);
4. what was collected is submitted, split by judge model and by the provider's limits
   (OpenAI 50,000 requests / 200 MB a file, Anthropic 100,000 / 256 MB), and the run waits
   again; with nothing collected the run completes and its gates are checked as usual.

A submission is paid for once, whatever stops the process: each batch is kept in the run
store *before* its provider is asked (a token of assay's own, the model, each custom id's
case, repeat, evaluator and cache key), and its provider id once the provider answers. A
submission whose id was never kept (the process died in between, or the answer was lost) is
looked for at the provider before anything is sent again, at the start of step 1 and before
a retry of a failed submit: found, it is adopted as if its answer had come; found never taken,
it is forgotten and its requests are collected and sent again; while a batch that may be it
cannot be told yet (Anthropic's batches carry no token: only the custom ids of an ended
batch's results prove it), the run waits. A server that does not list its batches cannot be
asked: the resume fails saying so and what to do, the submission kept and nothing sent again
(that could pay twice). See :mod:`assay.llm.providers.batches`.

Where the requests go up as a file first (OpenAI), the file's id is kept as soon as the
upload answers, before the batch is created: a submission found never taken whose file is
kept is made a batch of that file (uploaded again only if the provider no longer has it), so
no file is uploaded twice or left behind. Once the run is complete, the files of its batches
(input, output, error) are deleted at the provider; one that cannot be is a note of the run,
never a failure.

A run deleted while it waits (:func:`cancel_batches`, through
:func:`assay.run.delete.delete_run`) has its unfinished batches cancelled at the provider,
and the files it uploaded for them deleted.

Every batch API request that fails in a passing way is tried again as the run's retry policy
says (``max_attempts``, its backoff, a Retry-After up to ``max_retry_after_s``).

A judge that asks twice in sequence (a claims judge, a re-ask of an invalid answer) thus
takes one batch round per step. A provider without a batch API is refused before any call.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from assay._util.control_chars import printable
from assay.errors import ConfigError, EvaluationError
from assay.llm.batch import (
    BatchAnswer,
    BatchAPI,
    BatchBook,
    BatchStatus,
    Collected,
    InputFileGone,
    Lookup,
    NoBatchListing,
)
from assay.llm.engine import JudgeEngine
from assay.llm.types import ProviderError, RequestRejected
from assay.store import batches as stored
from assay.store.batches import BatchRequest, StoredBatch
from assay.store.runs import RunStore

if TYPE_CHECKING:
    from assay.run.runner import Runner, RunOutcome
    from assay.types.engine_config import RetryPolicy

T = TypeVar("T")

EXIT_WAITING = 75
"""``assay run --resume``'s exit code while a run still waits for its batches (sysexits'
EX_TEMPFAIL: try again later)."""

Finished = tuple[StoredBatch, BatchAPI, BatchStatus]
"""A batch of the run that is done, with its provider's API and its status."""


@dataclass
class BatchProgress:
    """Where a waiting run's batches are: each with its status and counts."""

    run_id: str
    batches: list[StoredBatch] = field(default_factory=list)
    submitted: int = 0
    """Requests submitted by this call (0: none, the run was only checked)."""

    @property
    def requests(self) -> int:
        return sum(b.requests for b in self.batches)

    def lines(self) -> list[str]:
        """One line per batch: its id, judge, status and the provider's counts (a submission
        whose batch id is not known yet: its token)."""
        found = []
        for b in self.batches:
            if not b.known:
                found.append(f"submission {b.batch_id} ({b.model}, {b.requests} request(s)): "
                             "sent, its batch id not known yet (looked for at the provider "
                             "before anything is sent again)")
                continue
            counts = ", ".join(f"{k} {v}" for k, v in sorted(b.counts.items()))
            found.append(f"batch {b.batch_id} ({b.model}, {b.requests} request(s)): "
                         f"{b.state}{f' ({counts})' if counts else ''}")
        return found


def progress_of(store: RunStore, run_id: str) -> BatchProgress:
    """Where a run's batches not collected yet were when last asked (nothing is asked)."""
    return BatchProgress(run_id, stored.run_batches(store, run_id, open_only=True))


@dataclass
class Cancelled:
    """What :func:`cancel_batches` did: the batches cancelled, those it could not cancel (by
    batch id, or a submission's token when its id is not known) with why, and the files it
    could not delete at the provider with why."""

    cancelled: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    files_left: dict[str, str] = field(default_factory=dict)


async def cancel_batches(store: RunStore, engine: JudgeEngine, run_id: str) -> Cancelled:
    """Cancel at its provider each batch of the run whose answers were not collected and
    which had not ended when last asked (the requests a provider has not run are then not
    billed), then delete the file its requests were uploaded in. A submission whose id was
    never kept is looked for first (as a resume does); one that cannot be told yet is not
    cancelled (a batch not verifiably the run's is never touched). A batch that could not be
    cancelled (provider down, key missing) is named in :attr:`Cancelled.failed`, its file
    kept; a file that could not be deleted, in :attr:`Cancelled.files_left`; nothing is
    raised."""
    done = Cancelled()
    for batch in stored.run_batches(store, run_id, open_only=True):
        try:
            api = _api(engine, batch.model)
            batch_id = await _cancel_one(store, engine, run_id, api, batch)
        except EvaluationError as exc:
            done.failed[batch.batch_id] = engine.scrub(exc.message)
            continue
        if batch_id is not None:
            done.cancelled.append(batch_id)
        if batch.input_file is not None:
            done.files_left.update(await delete_files(engine, api, [batch.input_file]))
    return done


async def _cancel_one(store: RunStore, engine: JudgeEngine, run_id: str, api: BatchAPI,
                      batch: StoredBatch) -> str | None:
    """Cancel one batch unless it ended or was never taken; the id cancelled, else None."""
    if batch.state in api.ended:
        return None
    batch_id = batch.batch_id
    if not batch.known:
        found = await _lookup(store, engine, run_id, batch)
        if found.batch_id is None and found.unsure:
            raise EvaluationError("batch_unknown", (
                f"its batch may be {', '.join(found.unsure)}, which cannot be told to be "
                "the run's before it ends"))
        if found.batch_id is None:
            return None
        batch_id = found.batch_id
    status = await _call(engine, f"cancelling batch {batch_id}",
                         functools.partial(api.cancel, batch_id,
                                           engine.config.retry.call_timeout_s))
    stored.update_batch(store, run_id, batch_id, status.state, status.counts)
    return batch_id


def refuse_unbatchable(engine: JudgeEngine, models: Iterable[str | None]) -> None:
    """ConfigError naming each judge model whose provider has no batch API assay speaks,
    before any call."""
    refused = sorted({engine.resolve(m).spec.display for m in models
                      if engine.resolve(m).batch_api() is None})
    if refused:
        raise ConfigError(
            f"batch: the judge model(s) {', '.join(map(repr, refused))} have no batch API "
            "(assay sends batches to OpenAI's Batch API for openai: models and to Anthropic's "
            "Message Batches for anthropic: models); run without batch (--no-batch, "
            "batch=False, or no execution.batch in the suite file), or judge with one of "
            "those", code="batch_unsupported")


async def judge_in_batches(runner: Runner, store: RunStore, engine: JudgeEngine, run_id: str,
                           *, keep: bool, wait: bool, poll_s: float
                           ) -> tuple[RunOutcome | None, BatchProgress | None]:
    """The batch run's loop (see the module docstring): the run's outcome once nothing
    waits for a batch (its batches' files then deleted at the provider, a note for each that
    could not be), else None and where its batches are (the run waits). A batch run has no
    budget (refused before it starts), so its outcome never leaves cases unrun."""
    book = engine.batch
    assert book is not None, "a batch run's engine has a book"
    while True:
        progress, read = await _gather(store, engine, run_id, book)
        if progress is not None:
            if not wait:
                return None, progress
            await asyncio.sleep(poll_s)
            continue
        outcome = await runner.run(run_id, keep=keep)
        stored.mark_collected(store, run_id, [batch.batch_id for batch, _, _ in read])
        if not book.collected:
            outcome.summary.notes += _problems(book)
            outcome.summary.notes += await _discard_files(engine, read)
            return outcome, None
        progress = await _submit(store, engine, run_id, book)
        if not wait:
            return None, progress


async def _gather(store: RunStore, engine: JudgeEngine, run_id: str,
                  book: BatchBook) -> tuple[BatchProgress | None, list[Finished]]:
    """Ask the run's batches for their status: a progress while one is not done, else the
    answers of every batch of the run read into ``book`` (an earlier round's too: a judge
    that asks again in a later round, after an answer it did not accept, is given that
    answer again, which was never cached) and the batches read."""
    unsure = await _settle(store, engine, run_id)
    found = [b for b in stored.run_batches(store, run_id) if b.known]
    if not found and not unsure:
        return None, []
    statuses: list[Finished] = []
    timeout = engine.config.retry.call_timeout_s
    for batch in found:
        api = _api(engine, batch.model)
        status = await _call(engine, f"asking batch {batch.batch_id} for its status",
                             functools.partial(api.status, batch.batch_id, timeout))
        _refuse_unknown_state(engine, run_id, batch, api, status)
        stored.update_batch(store, run_id, batch.batch_id, status.state, status.counts)
        batch.state, batch.counts = status.state, status.counts
        statuses.append((batch, api, status))
    if unsure or not all(status.done for _, _, status in statuses):
        return BatchProgress(run_id, stored.run_batches(store, run_id, open_only=True)), []
    book.problems.clear()  # every batch of the run is read again
    for batch, api, status in statuses:
        answers = await _call(engine, f"reading the results of batch {batch.batch_id}",
                              functools.partial(_results, batch, api, status, timeout))
        if isinstance(answers, str):
            _read_answers(store, engine, run_id, book, batch, [], answers)
        elif answers is not None:
            errors = status.detail.get("errors")
            _read_answers(store, engine, run_id, book, batch, answers, f"ended ({status.state}) "
                          f"without its answer{': ' + errors if errors else ''}")
    return None, statuses


def _refuse_unknown_state(engine: JudgeEngine, run_id: str, batch: StoredBatch, api: BatchAPI,
                          status: BatchStatus) -> None:
    """An EvaluationError when the provider reports a state of the batch that is none of its
    own: nothing tells whether it will end, and a run that waits for it (``batch_wait``)
    would wait for ever. The run is kept: a resume asks again."""
    if status.state in api.states:
        return
    raise EvaluationError("batch_state_unknown", engine.scrub(printable(
        f"run {run_id}: batch {batch.batch_id} ({batch.model}) is in the state "
        f"{status.state[:80]!r}, which is none of its provider's "
        f"({', '.join(sorted(api.states))}), so assay cannot tell whether it will end; the "
        f"run is kept: resume it later (assay run --resume {run_id}), or delete it (assay "
        f"delete {run_id})")))


def _read_answers(store: RunStore, engine: JudgeEngine, run_id: str, book: BatchBook,
                  batch: StoredBatch, answers: list[BatchAnswer], unanswered: str) -> None:
    """Put a finished batch's ``answers`` into ``book``: each request's answer under its
    cache key, where the results give it exactly one answer; every other request is marked
    to be sent the ordinary way, with why (``unanswered`` for no answer, an error, two
    answers that differ). A
    line naming no request, or a request the batch was never sent, is left out and named
    in :attr:`BatchBook.problems`."""
    requests = stored.batch_requests(store, run_id, batch.batch_id)
    sent = {r.custom_id for r in requests}
    given: dict[str, list[BatchAnswer]] = {}
    for answer in answers:
        if answer.custom_id is None:
            book.problems.append(engine.scrub(
                f"batch {batch.batch_id}: {answer.error}; that line was left out"))
        elif answer.custom_id not in sent:
            book.problems.append(engine.scrub(
                f"batch {batch.batch_id}: its results name custom_id "
                f"{printable(answer.custom_id[:80])!r}, which it was never sent; that answer "
                "was left out"))
        else:
            given.setdefault(answer.custom_id, []).append(answer)
    for request in requests:
        found = given.get(request.custom_id, [])
        distinct = {orjson.dumps([a.response, a.error], option=orjson.OPT_SORT_KEYS)
                    for a in found}
        if len(distinct) == 1 and found[0].response is not None:
            book.answers[request.cache_key] = found[0].response
            continue
        if len(distinct) > 1:
            why = (f"answered {len(found)} times, differently, so neither answer was "
                   "trusted")
        else:
            why = str(found[0].error) if found else unanswered
        book.failed[request.cache_key] = engine.scrub(printable(
            f"batch {batch.batch_id}, custom_id {request.custom_id}: {why}"))


MOST_SHOWN = 5
"""How many of the batch problems of a run its notes show (the rest are counted)."""


def _problems(book: BatchBook) -> list[str]:
    """The run's notes on its batches' results: the requests sent live because their batch
    gave no usable answer, with why, and what was wrong with the results themselves."""
    notes = []
    if book.failed:
        reasons = list(book.failed.values())
        more = f"; and {len(reasons) - MOST_SHOWN} more" if len(reasons) > MOST_SHOWN else ""
        notes.append(f"{len(reasons)} judge request(s) got no usable answer from their batch "
                     f"and were sent live: {'; '.join(reasons[:MOST_SHOWN])}{more}")
    shown = book.problems[:MOST_SHOWN]
    if len(book.problems) > MOST_SHOWN:
        shown.append(f"and {len(book.problems) - MOST_SHOWN} more such problem(s)")
    return notes + shown


async def _results(batch: StoredBatch, api: BatchAPI, status: BatchStatus,
                   timeout: float) -> list[BatchAnswer] | str | None:
    """The answers of a finished batch; None for one the run was judged from whose results
    are gone at the provider (deleted once the run was complete: a process that died before
    the run was stored complete leaves its cases stored, and nothing asks for them again);
    why, for one not judged from yet whose results are gone (the provider keeps them for a
    limited time): its requests are then sent the ordinary way, since no later resume could
    read them either."""
    try:
        return await api.results(status, timeout)
    except RequestRejected as exc:
        if exc.status != 404:
            raise
        return None if batch.collected else f"its results are gone at the provider ({exc})"


async def _settle(store: RunStore, engine: JudgeEngine, run_id: str) -> list[StoredBatch]:
    """Look for each submission of the run whose batch id was never kept: adopted when
    found; when the provider never took it, made a batch of the file its requests were
    uploaded in if that is kept, else forgotten (its requests are collected again); those
    that cannot be told yet are returned (the run waits for them)."""
    unsure = []
    for batch in stored.run_batches(store, run_id, open_only=True):
        if batch.known or batch.token is None:
            continue
        found = await _lookup(store, engine, run_id, batch)
        if found.batch_id is None and found.unsure:
            unsure.append(batch)
        elif found.batch_id is None and batch.input_file is not None:
            await _submit_uploaded(store, engine, run_id, batch)
        elif found.batch_id is None:
            stored.drop_intent(store, run_id, batch.token)
    return unsure


async def _lookup(store: RunStore, engine: JudgeEngine, run_id: str,
                  batch: StoredBatch) -> Lookup:
    """Ask the provider for the submission ``batch`` (kept, its id not known); a batch found
    is kept under its id at once. A server that does not list its batches cannot answer: an
    EvaluationError saying what to do (see :func:`unconfirmed`)."""
    token = batch.token
    assert token is not None
    api = _api(engine, batch.model)
    custom_ids = frozenset(r.custom_id for r in stored.batch_requests(store, run_id, token))

    async def find() -> Lookup:
        try:
            return await api.find(token, custom_ids, batch.submitted_at,
                                  engine.config.retry.call_timeout_s)
        except NoBatchListing as exc:
            raise EvaluationError("batch_unconfirmed",
                                  engine.scrub(unconfirmed(run_id, batch, exc))) from None

    found = await _call(engine, f"looking for the batch of submission {token}", find)
    if found.batch_id is not None:
        stored.record_batch_id(store, run_id, token, found.batch_id)
    return found


def unconfirmed(run_id: str, batch: StoredBatch, exc: NoBatchListing) -> str:
    """What a resume (or a delete) says of a submission whose batch id was never kept when
    its server does not list batches: which run, server and submission, why nothing was
    sent again, and what can be done."""
    return (
        f"run {run_id}: the submission {batch.token} ({batch.requests} request(s) to "
        f"{batch.model}) could not be confirmed: its batch id was never kept (the process "
        "that sent it stopped, or the answer was lost) and "
        f"{exc.url} answered HTTP {exc.status} to the listing of batches, so assay cannot "
        "tell whether that server made the batch. Nothing was sent "
        "again (that could pay for it twice) and the submission is kept. To go on: point "
        "the judge model at a server that lists its batches and resume again "
        f"(assay run --resume {run_id}); or, once you know the server has no batch of it "
        f"(its requests' custom ids start with '{batch.token}-'), or you accept paying for "
        f"it twice, delete the run (assay delete {run_id} --force) and run the suite again")


async def _submit(store: RunStore, engine: JudgeEngine, run_id: str,
                  book: BatchBook) -> BatchProgress:
    """Submit what ``book`` collected, split by judge model and the provider's limits, each
    batch kept in the store before the provider is asked and given its id once it answers."""
    by_model: dict[str, list[Collected]] = {}
    for item in book.collected.values():
        by_model.setdefault(item.model, []).append(item)
    submitted = 0
    for model, items in by_model.items():
        api = _api(engine, model)
        for chunk in _chunks(api, items):
            token = uuid.uuid4().hex
            intent = stored.record_intent(store, run_id, token, model, [
                BatchRequest(custom_id(token, i), case_id, repeat, evaluator, item.key)
                for i, item in enumerate(chunk) for case_id, repeat, evaluator
                in dict.fromkeys(item.slots)])
            await _send(store, engine, run_id, api, intent, [
                api.entry(custom_id(token, i), item.request) for i, item in enumerate(chunk)])
            submitted += len(chunk)
    book.submitted()
    return BatchProgress(run_id, stored.run_batches(store, run_id, open_only=True), submitted)


async def _send(store: RunStore, engine: JudgeEngine, run_id: str, api: BatchAPI,
                intent: StoredBatch, entries: list[dict[str, Any]]) -> None:
    """Submit the batch kept as ``intent``: its requests uploaded first where the provider
    takes them from a file (its id kept at once), then the batch made (:func:`_create`)."""
    token = intent.token
    assert token is not None
    uploaded = await _call(engine, f"uploading the requests of submission {token}",
                           functools.partial(api.upload, entries, token,
                                             engine.config.retry.call_timeout_s))
    if uploaded is not None:
        stored.record_input_file(store, run_id, token, uploaded)
    try:
        await _create(store, engine, run_id, api, intent, entries, uploaded)
    except InputFileGone as exc:  # just uploaded: the provider lost it
        raise EvaluationError("batch_failed", engine.scrub(
            f"submitting a batch of {len(entries)} request(s) to {intent.model}: {exc}")
        ) from None


async def _submit_uploaded(store: RunStore, engine: JudgeEngine, run_id: str,
                           intent: StoredBatch) -> None:
    """Make the batch of the file a submission the provider never took was uploaded in (a
    resume's: the process died between the upload and the batch); when the provider no
    longer has the file, the submission is forgotten (its requests are collected again and
    uploaded anew)."""
    assert intent.token is not None and intent.input_file is not None
    try:
        await _create(store, engine, run_id, _api(engine, intent.model), intent, [],
                      intent.input_file)
    except InputFileGone:
        stored.drop_intent(store, run_id, intent.token)


async def _create(store: RunStore, engine: JudgeEngine, run_id: str, api: BatchAPI,
                  intent: StoredBatch, entries: list[dict[str, Any]],
                  input_file: str | None) -> None:
    """Make the batch kept as ``intent`` (of ``input_file`` where there is one, else of
    ``entries``); its id kept once the provider answers. A request that failed in a passing
    way (a timeout, a dropped connection: the provider may have taken it) is tried again
    only once the provider, asked, has no batch of it; while that cannot be told, the
    submission is left to a resume. :class:`InputFileGone` is raised."""
    assert intent.token is not None
    policy = engine.config.retry
    what = f"submitting a batch of {intent.requests} request(s) to {intent.model}"
    for attempt in range(1, policy.max_attempts + 1):
        try:
            batch_id = await api.submit(entries, intent.token, policy.call_timeout_s,
                                        input_file)
        except InputFileGone:
            raise
        except ProviderError as exc:
            if not exc.retryable or attempt == policy.max_attempts:
                raise EvaluationError("batch_failed", engine.scrub(f"{what}: {exc}")) from None
            await asyncio.sleep(policy.wait_s(attempt, _retry_after(policy, exc)))
            found = await _lookup(store, engine, run_id, intent)
            if found.batch_id is not None or found.unsure:
                return
            continue
        stored.record_batch_id(store, run_id, intent.token, batch_id)
        return


async def _discard_files(engine: JudgeEngine, finished: list[Finished]) -> list[str]:
    """Delete at the provider the files of the run's batches (the input a submission
    uploaded, the output and error files its answers were read from): the run is judged and
    needs them no more. A file that could not be deleted is a note, never a failure."""
    left: dict[str, str] = {}
    for batch, api, status in finished:
        ids = [batch.input_file] if batch.input_file else []
        left.update(await delete_files(engine, api, ids + api.files(status)))
    if not left:
        return []
    named = "; ".join(f"{file_id} ({why})" for file_id, why in left.items())
    return [f"batch file(s) {named} could not be deleted at the provider; the results are "
            "whole: delete them there (DELETE /v1/files/{id}) if they should not be kept"]


async def delete_files(engine: JudgeEngine, api: BatchAPI, file_ids: list[str]
                       ) -> dict[str, str]:
    """Delete each file at the provider; those that could not be, with why (nothing is
    raised: a file left behind costs its storage, never a result)."""
    left = {}
    for file_id in file_ids:
        try:
            await _call(engine, f"deleting file {file_id}", functools.partial(
                api.delete_file, file_id, engine.config.retry.call_timeout_s))
        except EvaluationError as exc:
            left[file_id] = exc.message
    return left


def custom_id(token: str, index: int) -> str:
    """The custom id of a submission's ``index``-th request: its token in every one, so the
    ids of a batch's results tell whose it is (at most 64 characters of ``[A-Za-z0-9_-]``, as
    Anthropic asks)."""
    return f"{token}-{index}"


_TOKEN_WIDTH = "0" * 32
"""A stand-in as long as a token, for measuring entries before their token is drawn."""


def _chunks(api: BatchAPI, items: list[Collected]) -> Iterable[list[Collected]]:
    """``items`` in batches within the provider's request and size limits."""
    chunk: list[Collected] = []
    size = 0
    for i, item in enumerate(items):
        cost = api.entry_bytes(api.entry(custom_id(_TOKEN_WIDTH, i), item.request))
        if chunk and (len(chunk) >= api.limits.requests or size + cost > api.limits.bytes):
            yield chunk
            chunk, size = [], 0
        chunk.append(item)
        size += cost
    if chunk:
        yield chunk


def _api(engine: JudgeEngine, model: str) -> BatchAPI:
    api = engine.resolve(model).batch_api()
    if api is None:
        raise ConfigError(f"the judge model {model!r} has no batch API", code="batch_unsupported")
    return api


async def _call(engine: JudgeEngine, what: str, make: Callable[[], Awaitable[T]]) -> T:
    """A batch API request, tried again when it failed in a passing way, as the engine's
    retry policy says; an :class:`EvaluationError` saying what was being done when it fails
    for good (no secret in it)."""
    policy = engine.config.retry
    for attempt in range(1, policy.max_attempts + 1):
        try:
            return await make()
        except ProviderError as exc:
            if not exc.retryable or attempt == policy.max_attempts:
                raise EvaluationError("batch_failed", engine.scrub(f"{what}: {exc}")) from None
            await asyncio.sleep(policy.wait_s(attempt, _retry_after(policy, exc)))
    raise AssertionError("unreachable")


def _retry_after(policy: RetryPolicy, exc: ProviderError) -> float | None:
    """The provider's Retry-After, at most ``max_retry_after_s``, as the engine takes it."""
    return None if exc.retry_after is None else min(exc.retry_after, policy.max_retry_after_s)


__all__ = ["EXIT_WAITING", "BatchProgress", "Cancelled", "cancel_batches",
           "custom_id", "delete_files", "judge_in_batches", "progress_of",
           "refuse_unbatchable", "unconfirmed"]
