"""The providers' batch APIs: OpenAI's Batch API and Anthropic's Message Batches.

OpenAI: the requests are a JSONL file uploaded to ``/v1/files`` (purpose ``batch``, named
``assay-batch-{token}.jsonl``), each line ``{custom_id, method, url, body}``; ``POST
/v1/batches`` (endpoint ``/v1/chat/completions``, completion window ``24h``) makes the batch
of it (:meth:`OpenAIBatches.upload` and :meth:`OpenAIBatches.submit` are two steps, so the
file's id is kept in between), ``GET /v1/batches/{id}`` reports it, and its ``output_file_id``
and ``error_file_id`` are read through ``/v1/files/{id}/content``, a line per request carrying
its ``custom_id``; ``DELETE /v1/files/{id}`` deletes each file once it is no longer needed. At
most 50,000 requests and 200 MB a file.

Anthropic: ``POST /v1/messages/batches`` with ``requests: [{custom_id, params}]``, ``GET
/v1/messages/batches/{id}`` until its ``processing_status`` is ``ended``, then the JSONL at its
``results_url``, each line's ``result.type`` ``succeeded``, ``errored``, ``canceled`` or
``expired``. At most 100,000 requests and 256 MB a batch.

A submission whose batch id was never kept (the process died between the provider's answer
and the store's record) is looked for (:meth:`find`) before anything is sent again. OpenAI's
batch carries assay's token in its ``metadata`` (``assay_token``), so ``GET /v1/batches``
(newest first, a page of 100 after ``after``) finds it for certain. Anthropic's batches carry
no metadata: ``GET /v1/messages/batches`` (newest first, a page of 1,000 after ``after_id``)
gives those created since the submission with as many requests; one is adopted only once it
has ended and its results' custom ids (each made with the token) are exactly the
submission's, and while one that may be it still runs, nothing is sent. A server that answers
404 or 405 to the listing (an OpenAI-compatible one that does not list batches) cannot be
asked: :class:`~assay.llm.batch.NoBatchListing`. ``POST .../{id}/cancel`` cancels a batch (a
run deleted while it waits).

Every answer is turned into the OpenAI-shaped response the live call gives (Anthropic's
through :func:`~assay.llm.providers.anthropic_http.from_anthropic`), so a judge reads a
batch's answer exactly as a live one. The keys travel in the same headers as live calls, and
a results URL on another origin is refused, as a redirect there would be. A batch id or file
id the provider gives goes into a URL only once it is checked to be an id
(:func:`provider_id`), and a results line that cannot be read costs no other answer
(:func:`result_lines`).
"""

from __future__ import annotations

import contextlib
import re
import uuid
from abc import abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import orjson
from yarl import URL

from assay._util import jsondata
from assay._util.control_chars import printable
from assay._util.redact import redact_url
from assay.llm.batch import (
    BatchAnswer,
    BatchAPI,
    BatchLimits,
    BatchStatus,
    InputFileGone,
    Lookup,
    NoBatchListing,
)
from assay.llm.providers.http_session import (
    DEFAULT_MAX_BYTES,
    decode_json,
    exchange,
    exchange_lines,
)
from assay.llm.types import BadResponse, ChatRequest, RequestRejected

if TYPE_CHECKING:
    from assay.llm.providers.anthropic_http import AnthropicProvider
    from assay.llm.providers.openai_http import OpenAIHTTPProvider

RESULTS_MAX_BYTES = 1024 * 1024 * 1024
"""The largest results file read (a batch's answers: 50,000 judgements of a few KB each). It
is read a line at a time, never held whole."""
RESULT_LINE_MAX_BYTES = DEFAULT_MAX_BYTES
"""The longest line of a results file read: one answer, held to a live answer's bound."""
OPENAI_DONE = frozenset({"completed", "failed", "expired", "cancelled"})
OPENAI_STATES = OPENAI_DONE | {"validating", "in_progress", "finalizing", "cancelling"}
"""Every state OpenAI's Batch API gives a batch."""
ANTHROPIC_STATES = frozenset({"in_progress", "canceling", "ended"})
"""Every ``processing_status`` Anthropic gives a message batch."""
PROVIDER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,255}")
"""What a batch id or file id the provider gives must be before it goes into a URL: a path
segment that is only itself (no '/', '?', '#', '%', no '.' or '..', no control character)."""
OPENAI_ENDPOINT = "/v1/chat/completions"
TOKEN_KEY = "assay_token"
"""The key of assay's token in an OpenAI batch's ``metadata``."""
LISTING_UNSERVED = frozenset({404, 405})
"""What a server that does not list its batches answers to the listing."""
MAX_PAGES = 10_000
"""The most pages of a listing of batches read (a million batches or more, newer than the
submission looked for): past it, the listing is taken as one without end."""
CLOCK_MARGIN_S = 600.0
"""How much earlier than the recorded submission a batch it made may say it was created (the
provider's clock and this machine's differ)."""


class NotAnId(BadResponse):
    """The provider gave, as the id of a batch or a file, a value that is not one: it is put
    into no URL (it could name another resource of the provider, which assay would then
    read or delete with the key). Trying again gives the same value: not retryable."""

    code = "batch_bad_id"
    retryable = False


def provider_id(value: Any, what: str) -> str:
    """``value``, an id the provider gave (``what`` says which), checked to be one
    (:data:`PROVIDER_ID`) before it goes into a URL; :class:`NotAnId` naming it if not."""
    if isinstance(value, str) and PROVIDER_ID.fullmatch(value):
        return value
    shown = printable(repr(value) if isinstance(value, str) else orjson.dumps(value).decode())
    raise NotAnId(f"{what} {shown[:120]} is not an id (1-256 letters, digits, '_', '-', "
                  "'.' or ':', starting with a letter or digit); assay puts no such value "
                  "into a URL")


class EndlessListing(BadResponse):
    """A listing of batches that never ends (a page asked for twice, or more than
    :data:`MAX_PAGES`): asking again gives the same, so not retryable."""

    code = "batch_listing_endless"
    retryable = False


async def result_lines(url: str, lines: AsyncIterator[bytes | None],
                       answer: Callable[[dict[str, Any], str], BatchAnswer]
                       ) -> AsyncIterator[BatchAnswer]:
    """The answers of a batch's JSONL results from ``url``, read a line at a time as
    :func:`~assay.llm.providers.http_session.exchange_lines` gives them (blank lines
    skipped), ``answer`` reading each line that is an object naming its request (its
    ``custom_id``); a line that is not (or is longer than :data:`RESULT_LINE_MAX_BYTES`) is
    an answer without a custom id whose error says which line and what was wrong, so that
    one bad line costs no other answer of the file."""
    where = redact_url(url)
    n = 0
    async for line in lines:
        n += 1
        if line is None:
            yield BatchAnswer(None, error=f"line {n} of {where} is longer than "
                                          f"{RESULT_LINE_MAX_BYTES:,} bytes")
        elif line.strip():
            yield _result_line(line, n, where, answer)


def _result_line(line: bytes, n: int, where: str,
                 answer: Callable[[dict[str, Any], str], BatchAnswer]) -> BatchAnswer:
    """The answer of line ``n`` of a results file (see :func:`result_lines`). A line naming
    a key twice is its request's error, saying where (its request is sent live, as one the
    batch failed); when the key is ``custom_id`` the request it answers cannot be told, and
    the line is one naming no request."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return BatchAnswer(None, error=f"line {n} of {where} is not JSON")
    if not isinstance(value, dict):
        return BatchAnswer(None, error=f"line {n} of {where} is not a JSON object")
    if not isinstance(value.get("custom_id"), str) or not value["custom_id"]:
        return BatchAnswer(None, error=f"line {n} of {where} names no custom_id")
    try:
        jsondata.refuse_repeated_keys(line)
    except jsondata.DuplicateKey as exc:  # the line says two things: neither is an answer
        named = None if exc.key == "custom_id" else value["custom_id"]
        return BatchAnswer(named, error=f"line {n} of {where}: {exc}")
    return answer(value, value["custom_id"])


async def read_results(url: str, headers: dict[str, str], timeout: float,
                       answer: Callable[[dict[str, Any], str], BatchAnswer]
                       ) -> AsyncIterator[BatchAnswer]:
    """The answers of the results file at ``url``, streamed: the file is never held whole
    (it may be a gigabyte), only the line being read."""
    async with contextlib.aclosing(exchange_lines(
            "GET", url, headers, timeout, RESULTS_MAX_BYTES, RESULT_LINE_MAX_BYTES)) as lines:
        async for found in result_lines(url, lines, answer):
            yield found


async def fetch_object(method: str, url: str, headers: dict[str, str], timeout: float,
                       body: dict[str, Any] | None = None) -> dict[str, Any]:
    """A request (with a JSON ``body``, or none) whose answer must be a JSON object."""
    found = decode_json(url, await exchange(
        method, url, None if body is None else orjson.dumps(body), headers, timeout))
    if not isinstance(found, dict):
        raise BadResponse(f"{redact_url(url)} answered with JSON that is not an object")
    return found


def _id_of(found: Any, url: str, what: str) -> str:
    """The ``id`` of a created object (a file, a batch); BadResponse saying ``what`` came
    back instead."""
    value = found.get("id") if isinstance(found, dict) else None
    if not isinstance(value, str) or not value:
        raise BadResponse(f"{redact_url(url)} answered {what}")
    return provider_id(value, f"{redact_url(url)} answered the id")


async def pages(fetch: Callable[[str, str], Awaitable[dict[str, Any]]], url: str, cursor: str,
                limit: int, since: float, created: Callable[[dict[str, Any]], float | None]
                ) -> AsyncIterator[dict[str, Any]]:
    """The batches of a newest-first listing at ``url`` down to those created before
    ``since`` less :data:`CLOCK_MARGIN_S` (``created``: a batch's creation as a Unix time,
    None when it does not say), a page of ``limit`` at a time, each next page after the last
    id of the one before (``cursor``: the query parameter naming it)."""
    after: str | None = None
    seen: set[str] = set()
    while True:
        query = {"limit": str(limit), **({cursor: after} if after else {})}
        try:
            page = await fetch("GET", f"{url}?{urlencode(query)}")
        except RequestRejected as exc:
            if after is None and exc.status in LISTING_UNSERVED:
                raise NoBatchListing(redact_url(url), exc.status) from None
            raise
        data = page.get("data")
        data = [b for b in data if isinstance(b, dict)] if isinstance(data, list) else []
        for batch in data:
            when = created(batch)
            if when is not None and when < since - CLOCK_MARGIN_S:
                return
            yield batch
        after = page.get("last_id") or (data[-1].get("id") if data else None)
        if not page.get("has_more") or not data or not isinstance(after, str):
            return
        if after in seen or len(seen) >= MAX_PAGES:
            raise EndlessListing(
                f"{redact_url(url)} lists its batches without end (a page after "
                f"{printable(after[:80])!r} {'again' if after in seen else f'past {MAX_PAGES} pages'}"
                "); assay cannot tell from it whether a submission was made")
        seen.add(after)


def _counts(value: Any) -> dict[str, int]:
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, int) and not isinstance(v, bool)}


def _errors_text(errors: Any) -> str | None:
    """A batch's ``errors`` (OpenAI: ``{object: list, data: [...]}``) as one line, the first
    three of them; whatever else a provider put there, as text; None for none."""
    data = errors.get("data") if isinstance(errors, dict) else errors
    if not data:
        return None
    items = data[:3] if isinstance(data, list) else [data]
    return "; ".join(_error_text(e) for e in items)


def _error_text(value: Any) -> str:
    """A provider's error object (nested as either provider nests it) as one line."""
    while isinstance(value, dict) and isinstance(value.get("error"), dict):
        value = value["error"]
    if isinstance(value, dict):
        kind = value.get("type") or value.get("code") or "error"
        return f"{kind}: {value.get('message') or ''}".strip()
    return str(value or "error")


def _state(value: Any) -> str:
    """A batch's state as its provider gave it, as text ("unknown" for none)."""
    if isinstance(value, str) and value:
        return value
    return "unknown" if value is None or value == "" else orjson.dumps(value).decode()


def _unix(batch: dict[str, Any]) -> float | None:
    value = batch.get("created_at")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def _iso_unix(batch: dict[str, Any]) -> float | None:
    try:
        return datetime.fromisoformat(str(batch.get("created_at"))).timestamp()
    except ValueError:
        return None


class _ProviderBatches(BatchAPI):
    """What both providers' batch APIs do alike: a batch lives at ``batches/{id}``, and
    cancelling it is a POST to its ``cancel``, answered by its status."""

    batches: str
    """The URL of the provider's batches collection."""

    @abstractmethod
    async def _json(self, method: str, url: str, timeout: float,
                    body: dict[str, Any] | None = None) -> dict[str, Any]:
        """A JSON request to the provider, with its own headers; the answer's object."""

    async def cancel(self, batch_id: str, timeout: float) -> BatchStatus:
        await self._json("POST", self._batch_url(batch_id, "cancel"), timeout)
        return await self.status(batch_id, timeout)

    def _batch_url(self, batch_id: str, *rest: str) -> str:
        """The URL of the batch ``batch_id`` (or of ``rest`` below it), the id checked
        (:func:`provider_id`)."""
        return "/".join((self.batches, provider_id(batch_id, "the batch id"), *rest))


class OpenAIBatches(_ProviderBatches):
    """OpenAI's Batch API for an ``openai:`` model."""

    limits = BatchLimits(requests=50_000, bytes=200 * 1024 * 1024)
    ended = OPENAI_DONE
    states = OPENAI_STATES

    def __init__(self, provider: OpenAIHTTPProvider) -> None:
        self.provider = provider
        self.base = provider.base_url
        self.batches = f"{self.base}/batches"
        self.headers = {k: v for k, v in provider.headers.items()
                        if k.lower() != "content-type"}

    def entry(self, custom_id: str, request: ChatRequest) -> dict[str, Any]:
        return {"custom_id": custom_id, "method": "POST", "url": OPENAI_ENDPOINT,
                "body": self.provider.body(request)}

    async def upload(self, entries: list[dict[str, Any]], token: str,
                     timeout: float) -> str | None:
        content = b"".join(orjson.dumps(e) + b"\n" for e in entries)
        boundary = f"assay-{uuid.uuid4().hex}"
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n"
                f"batch\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
                f"filename=\"assay-batch-{token}.jsonl\"\r\nContent-Type: application/jsonl"
                "\r\n\r\n").encode() + content + f"\r\n--{boundary}--\r\n".encode()
        url = f"{self.base}/files"
        uploaded = decode_json(url, await exchange(
            "POST", url, body, {**self.headers,
                                "Content-Type": f"multipart/form-data; boundary={boundary}"},
            timeout))
        return _id_of(uploaded, url, "an upload without a file id")

    async def submit(self, entries: list[dict[str, Any]], token: str, timeout: float,
                     input_file: str | None = None) -> str:
        if input_file is None:
            input_file = await self.upload(entries, token, timeout)
        try:
            created = await self._json("POST", self.batches, timeout, {
                "input_file_id": input_file, "endpoint": OPENAI_ENDPOINT,
                "completion_window": "24h", "metadata": {TOKEN_KEY: token}})
        except RequestRejected as exc:
            if exc.status == 404:
                raise InputFileGone(f"the input file {input_file} is gone: {exc}",
                                    status=404) from None
            raise
        return _id_of(created, self.batches, "without a batch id")

    def files(self, status: BatchStatus) -> list[str]:
        return [f for f in (status.detail.get("output_file_id"),
                            status.detail.get("error_file_id")) if isinstance(f, str) and f]

    def _file_url(self, file_id: str, *rest: str) -> str:
        """The URL of the file ``file_id`` (or of ``rest`` below it), the id checked."""
        return "/".join((self.base, "files", provider_id(file_id, "the file id"), *rest))

    async def delete_file(self, file_id: str, timeout: float) -> None:
        try:
            await self._json("DELETE", self._file_url(file_id), timeout)
        except RequestRejected as exc:
            if exc.status != 404:  # already gone: what was asked for
                raise

    async def find(self, token: str, custom_ids: frozenset[str], since: float,
                   timeout: float) -> Lookup:
        async for batch in pages(lambda m, u: self._json(m, u, timeout), f"{self.base}/batches",
                                 "after", 100, since, _unix):
            metadata = batch.get("metadata")
            if isinstance(metadata, dict) and metadata.get(TOKEN_KEY) == token:
                return Lookup(provider_id(batch.get("id"), "the listed batch id of submission "
                                          f"{token}"))
        return Lookup()

    async def status(self, batch_id: str, timeout: float) -> BatchStatus:
        found = await self._json("GET", self._batch_url(batch_id), timeout)
        state = _state(found.get("status"))
        detail: dict[str, Any] = {
            name: provider_id(found[name], f"batch {batch_id}'s {name}")
            for name in ("output_file_id", "error_file_id") if found.get(name) is not None
            and found.get(name) != ""}
        errors = _errors_text(found.get("errors"))
        if errors:
            detail["errors"] = errors
        return BatchStatus(batch_id, state, state in self.ended,
                           _counts(found.get("request_counts")), detail)

    async def answers(self, status: BatchStatus, timeout: float) -> AsyncIterator[BatchAnswer]:
        for file_id in self.files(status):
            url = self._file_url(file_id, "content")
            async for found in read_results(url, self.headers, timeout, self._answer):
                yield found

    @staticmethod
    def _answer(line: dict[str, Any], custom_id: str) -> BatchAnswer:
        if line.get("error"):
            return BatchAnswer(custom_id, error=_error_text(line["error"]))
        response = line.get("response")
        response = response if isinstance(response, dict) else {}
        body = response.get("body")
        status = response.get("status_code")
        if status != 200 or not isinstance(body, dict):
            return BatchAnswer(custom_id, error=f"HTTP {status}: {_error_text(body)}")
        if not body.get("choices"):
            return BatchAnswer(custom_id, error="the answer has no choices")
        return BatchAnswer(custom_id, response=body)

    async def _json(self, method: str, url: str, timeout: float,
                    body: dict[str, Any] | None = None) -> dict[str, Any]:
        headers = self.headers if body is None else \
            {**self.headers, "Content-Type": "application/json"}
        return await fetch_object(method, url, headers, timeout, body)


class AnthropicBatches(_ProviderBatches):
    """Anthropic's Message Batches for an ``anthropic:`` model."""

    limits = BatchLimits(requests=100_000, bytes=256 * 1024 * 1024)
    ended = frozenset({"ended"})
    states = ANTHROPIC_STATES

    def __init__(self, provider: AnthropicProvider) -> None:
        self.provider = provider
        self.base = self.batches = f"{provider.base_url}/v1/messages/batches"
        self.headers = provider.headers

    def entry(self, custom_id: str, request: ChatRequest) -> dict[str, Any]:
        return {"custom_id": custom_id, "params": self.provider.body(request)}

    async def submit(self, entries: list[dict[str, Any]], token: str, timeout: float,
                     input_file: str | None = None) -> str:
        created = await self._json("POST", self.base, timeout, {"requests": entries})
        return _id_of(created, self.base, "without a batch id")

    async def find(self, token: str, custom_ids: frozenset[str], since: float,
                   timeout: float) -> Lookup:
        unsure = []
        async for batch in pages(lambda m, u: self._json(m, u, timeout), self.base, "after_id",
                                 1000, since, _iso_unix):
            batch_id = batch.get("id")
            if not isinstance(batch_id, str) or not PROVIDER_ID.fullmatch(batch_id) or \
                    sum(_counts(batch.get("request_counts")).values()) != len(custom_ids):
                continue  # (a batch without an id could not be the submission's)
            status = await self.status(batch_id, timeout)
            if not status.done:
                unsure.append(batch_id)
            elif await self._custom_ids(status, timeout) == custom_ids:
                return Lookup(batch_id)
        return Lookup(unsure=tuple(unsure))

    async def status(self, batch_id: str, timeout: float) -> BatchStatus:
        found = await self._json("GET", self._batch_url(batch_id), timeout)
        state = _state(found.get("processing_status"))
        return BatchStatus(batch_id, state, state in self.ended,
                           _counts(found.get("request_counts")),
                           {"results_url": found.get("results_url")})

    async def answers(self, status: BatchStatus, timeout: float) -> AsyncIterator[BatchAnswer]:
        url = status.detail.get("results_url")
        if not isinstance(url, str) or not url:
            return
        here, there = URL(self.base), URL(url)
        if (there.scheme, there.host, there.port) != (here.scheme, here.host, here.port):
            raise RequestRejected(f"the results of batch {status.batch_id} are at another "
                                  f"origin ({redact_url(url)}); assay does not send the key "
                                  "there")
        async for found in read_results(url, self.headers, timeout, self._answer):
            yield found

    async def _custom_ids(self, status: BatchStatus, timeout: float) -> set[str]:
        """The custom ids a finished batch's results name (its answers read and let go)."""
        return {found.custom_id async for found in self.answers(status, timeout)
                if found.custom_id is not None}

    def _answer(self, line: dict[str, Any], custom_id: str) -> BatchAnswer:
        from assay.llm.providers.anthropic_http import from_anthropic

        result = line.get("result")
        result = result if isinstance(result, dict) else {}
        kind = result.get("type")
        if kind == "succeeded" and isinstance(result.get("message"), dict):
            try:
                return BatchAnswer(custom_id, response=from_anthropic(
                    result["message"], self.provider.spec.display))
            except BadResponse as exc:
                return BatchAnswer(custom_id, error=str(exc))
        if kind == "errored":
            return BatchAnswer(custom_id, error=f"errored: {_error_text(result.get('error'))}")
        return BatchAnswer(custom_id, error=f"the request {kind}" if kind in (
            "canceled", "expired") else f"a result of type {printable(str(kind))[:40]!r}"
            if kind else "no result")

    async def _json(self, method: str, url: str, timeout: float,
                    body: dict[str, Any] | None = None) -> dict[str, Any]:
        return await fetch_object(method, url, self.headers, timeout, body)
