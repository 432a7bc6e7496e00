"""The mock server's batch APIs: OpenAI's Files and Batch API, Anthropic's Message Batches.

Served by :class:`~assay.testing.mock_server.MockServer` beside its chat endpoints, in the
providers' shapes, each request answered by the same deterministic answers as a live call:

- ``POST /v1/files`` (multipart: ``purpose=batch``, ``file``), ``GET /v1/files/{id}/content``,
  ``DELETE /v1/files/{id}`` (``{id, object: file, deleted: true}``; 404 for no such file);
- ``POST /v1/batches`` (``input_file_id``, ``endpoint`` ``/v1/chat/completions``,
  ``completion_window`` ``24h``, optional ``metadata``: at most 16 string pairs, keys of at
  most 64 characters, values of at most 512, returned with the batch), ``GET
  /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``, ``GET /v1/batches`` (newest first,
  ``limit`` 1-100 (20), ``after`` a batch id; ``object`` ``list``, ``data``, ``first_id``,
  ``last_id``, ``has_more``); a completed batch has an ``output_file_id`` (a line per answer:
  ``custom_id``, ``response.status_code``, ``response.body``) and, when some failed, an
  ``error_file_id``;
- ``POST /v1/messages/batches`` (``requests: [{custom_id, params}]``), ``GET
  /v1/messages/batches/{id}`` (``processing_status``, ``request_counts``, ``results_url``
  once ended), ``GET /v1/messages/batches/{id}/results`` (``result.type`` succeeded, errored,
  canceled or expired), ``POST /v1/messages/batches/{id}/cancel``, ``GET
  /v1/messages/batches`` (newest first, ``limit`` 1-1000 (20), ``after_id`` or
  ``before_id``; ``data``, ``first_id``, ``last_id``, ``has_more``).

A listing shows each batch as it is, without moving it on (only a status request does).

How a batch ends is :class:`~assay.testing.mock_server.MockConfig`'s: ``batch_polls`` (status
requests that find it in progress before it ends), ``batch_end`` (``completed``, or the whole
batch ``expired``, ``failed``, ``cancelled``), ``batch_errored`` and ``batch_expired`` (the
first requests of each batch that error, then expire). Its ``batch_listing`` False answers
both listings with 404 (a server that does not list batches), ``file_delete_status`` answers
every file delete with that error status, and ``batch_unavailable`` answers every batch API
request with 503 (a provider that is down). ``batch_body`` lays fields over every batch object
answered (an unknown status, odd ``errors``, an id that is not one) and
``batch_result_lines`` adds raw lines to every finished batch's results: a hostile provider.
The stats count the uploads
(``files_uploaded``), the files deleted (``files_deleted``, their ids) and the batch API
requests answered 503 (``batch_unavailable``).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import BodyPartReader, web

from assay.llm.providers.scripted import answer

if TYPE_CHECKING:
    from assay.testing.mock_server import MockServer

OPENAI_ENDPOINT = "/v1/chat/completions"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
CUSTOM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""An Anthropic batch request's custom id."""


@dataclass
class MockBatch:
    """A batch the server holds: its provider's object, its requests and what it answered."""

    kind: str  # "openai" or "anthropic"
    body: dict[str, Any]
    requests: list[tuple[str, dict[str, Any]]]
    polls: int = 0
    cancelled: bool = False
    results: list[dict[str, Any]] = field(default_factory=list)


def _error(message: str, status: int = 400) -> web.Response:
    return web.json_response({"error": {"message": message, "type": "invalid_request_error"}},
                             status=status)


SENT_CHUNK = 64 * 1024


async def _sent(request: web.Request, body: bytes, content_type: str) -> web.StreamResponse:
    """``body`` sent a chunk at a time, each written once the client took the one before, as
    a provider serves a results file: a file of a gigabyte is never copied whole into the
    server's send buffer."""
    response = web.StreamResponse(headers={"Content-Type": content_type})
    response.content_length = len(body)
    await response.prepare(request)
    view = memoryview(body)
    for start in range(0, len(body), SENT_CHUNK):
        await response.write(view[start:start + SENT_CHUNK])
    await response.write_eof()
    return response


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


class BatchEndpoints:
    """The batch routes of one mock server, sharing its answers and its configuration."""

    def __init__(self, server: MockServer) -> None:
        self.server = server
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, MockBatch] = {}

    def routes(self, app: web.Application) -> None:
        for method, path, handler in (
                ("POST", "/v1/files", self.upload),
                ("GET", "/v1/files/{id}/content", self.content),
                ("DELETE", "/v1/files/{id}", self.delete_file),
                ("POST", "/v1/batches", self.create_openai),
                ("GET", "/v1/batches", self.list_openai),
                ("GET", "/v1/batches/{id}", self.retrieve),
                ("POST", "/v1/batches/{id}/cancel", self.cancel),
                ("POST", "/v1/messages/batches", self.create_anthropic),
                ("GET", "/v1/messages/batches", self.list_anthropic),
                ("GET", "/v1/messages/batches/{id}", self.retrieve),
                ("POST", "/v1/messages/batches/{id}/cancel", self.cancel),
                ("GET", "/v1/messages/batches/{id}/results", self.anthropic_results)):
            app.router.add_route(method, path, self._unless_down(handler))

    def _unless_down(self, handler: Handler) -> Handler:
        """``handler``, or HTTP 503 while the configuration has the batch APIs down."""
        async def serve(request: web.Request) -> web.StreamResponse:
            if self.server.config.batch_unavailable:
                self.server.stats.batch_unavailable += 1
                return _error("mock: the batch API is down", 503)
            return await handler(request)
        return serve

    # -- OpenAI -------------------------------------------------------------------------

    async def upload(self, request: web.Request) -> web.Response:
        purpose, content, name = None, None, "upload.jsonl"
        try:
            reader = await request.multipart()
            while (part := await reader.next()) is not None:
                if not isinstance(part, BodyPartReader):
                    continue
                if part.name == "purpose":
                    purpose = await part.text()
                elif part.name == "file":
                    name = part.filename or name
                    content = bytes(await part.read())
        except (ValueError, AssertionError, KeyError):
            return _error("expected a multipart/form-data body")
        if content is None or purpose != "batch":
            return _error("'file' and purpose 'batch' are required")
        file_id = f"file-{uuid.uuid4().hex[:24]}"
        self.files[file_id] = content
        self.server.stats.files_uploaded += 1
        return web.json_response({"id": file_id, "object": "file", "bytes": len(content),
                                  "created_at": int(time.time()), "filename": name,
                                  "purpose": "batch"})

    async def content(self, request: web.Request) -> web.StreamResponse:
        found = self.files.get(request.match_info["id"])
        if found is None:
            return _error("no such file", 404)
        return await _sent(request, found, "application/octet-stream")

    async def delete_file(self, request: web.Request) -> web.Response:
        file_id = request.match_info["id"]
        status = self.server.config.file_delete_status
        if status is not None:
            return _error("mock: files cannot be deleted now", status)
        if self.files.pop(file_id, None) is None:
            return _error("no such file", 404)
        self.server.stats.files_deleted.append(file_id)
        return web.json_response({"id": file_id, "object": "file", "deleted": True})

    async def create_openai(self, request: web.Request) -> web.Response:
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            return _error("malformed body")
        if body.get("endpoint") != OPENAI_ENDPOINT or body.get("completion_window") != "24h":
            return _error("endpoint must be /v1/chat/completions, completion_window 24h")
        problem = _metadata_problem(body.get("metadata"))
        if problem:
            return _error(problem)
        content = self.files.get(str(body.get("input_file_id")))
        if content is None:
            return _error("no such input file", 404)
        requests: list[tuple[str, dict[str, Any]]] = []
        for n, line in enumerate(content.splitlines(), 1):
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                return _error(f"line {n} is not JSON")
            if entry.get("method") != "POST" or entry.get("url") != OPENAI_ENDPOINT or \
                    not isinstance(entry.get("body"), dict) or not entry.get("custom_id"):
                return _error(f"line {n}: custom_id, method POST, url {OPENAI_ENDPOINT} and "
                              "body are required")
            requests.append((str(entry["custom_id"]), entry["body"]))
        problem = _problem(requests)
        if problem:
            return _error(problem)
        now = int(time.time())
        batch_id = f"batch_{uuid.uuid4().hex[:24]}"
        batch = MockBatch("openai", {
            "id": batch_id, "object": "batch", "endpoint": OPENAI_ENDPOINT, "errors": None,
            "input_file_id": body["input_file_id"], "completion_window": "24h",
            "status": "validating", "output_file_id": None, "error_file_id": None,
            "created_at": now, "in_progress_at": None, "expires_at": now + 86400,
            "completed_at": None, "failed_at": None, "expired_at": None, "cancelled_at": None,
            "request_counts": {"total": len(requests), "completed": 0, "failed": 0},
            "metadata": body.get("metadata")}, requests)
        return self._created(batch)

    def _finish_openai(self, batch: MockBatch, outcomes: list[str], end: str) -> None:
        now = int(time.time())
        out: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for (custom_id, body), outcome in zip(batch.requests, outcomes, strict=True):
            line: dict[str, Any] = {"id": f"batch_req_{uuid.uuid4().hex[:16]}",
                                    "custom_id": custom_id, "response": None, "error": None}
            if outcome == "succeeded":
                line["response"] = {"status_code": 200, "request_id": uuid.uuid4().hex,
                                    "body": self._answer(answer(body), len(out))}
                out.append(line)
                continue
            if outcome == "errored":
                line["response"] = {"status_code": 400, "request_id": uuid.uuid4().hex,
                                    "body": {"error": {"message": "mock: this request errored",
                                                       "type": "invalid_request_error"}}}
            else:
                line["error"] = {"code": f"batch_{outcome}",
                                 "message": f"mock: this request was {outcome}"}
            errors.append(line)
        body = batch.body
        body["status"] = end
        body[f"{end}_at"] = now
        if end == "failed":
            body["errors"] = {"object": "list", "data": [
                {"code": "mock_failed", "message": "mock: the batch failed", "line": None}]}
            body["request_counts"]["failed"] = len(outcomes)
            return
        extra = self._extra_lines(batch)
        if out or extra:
            body["output_file_id"] = self._file(out, extra)
        if errors:
            body["error_file_id"] = self._file(errors)
        body["request_counts"].update(completed=len(out), failed=len(errors))

    def _answer(self, response: dict[str, Any], index: int) -> Any:
        """The ``index``-th answer of a batch as its results give it: naming a key twice
        (``batch_repeated_keys``), as raw JSON, or as it is."""
        from assay.testing.mock_server import repeated_key

        if index < self.server.config.batch_repeated_keys:
            return orjson.Fragment(repeated_key(response))
        return response

    def _file(self, lines: list[dict[str, Any]], extra: bytes = b"") -> str:
        file_id = f"file-{uuid.uuid4().hex[:24]}"
        self.files[file_id] = b"".join(orjson.dumps(line) + b"\n" for line in lines) + extra
        return file_id

    def _extra_lines(self, batch: MockBatch) -> bytes:
        """The configuration's raw result lines for ``batch`` (``batch_result_lines``)."""
        first = batch.requests[0][0] if batch.requests else ""
        return b"".join(line.replace("$custom_id", first).encode() + b"\n"
                        for line in self.server.config.batch_result_lines)

    def _shown(self, body: dict[str, Any]) -> dict[str, Any]:
        """A batch object as the server answers with it: the configuration's
        ``batch_body`` laid over it."""
        return {**body, **self.server.config.batch_body}

    # -- Anthropic ----------------------------------------------------------------------

    async def create_anthropic(self, request: web.Request) -> web.Response:
        from assay.testing.mock_server import _from_anthropic_request

        try:
            body = orjson.loads(await request.read())
            requests = [(str(r["custom_id"]), _from_anthropic_request(r["params"]))
                        for r in body["requests"]]
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
            return _error("requests: a list of {custom_id, params} is required")
        problem = _problem(requests) or next(
            (f"custom_id {c!r} must be 1-64 characters of letters, digits, '_' and '-'"
             for c, _ in requests if not CUSTOM_ID.fullmatch(c)), None)
        if problem:
            return _error(problem)
        now = time.time()
        batch_id = f"msgbatch_{uuid.uuid4().hex[:24]}"
        batch = MockBatch("anthropic", {
            "id": batch_id, "type": "message_batch", "processing_status": "in_progress",
            "request_counts": {"processing": len(requests), "succeeded": 0, "errored": 0,
                               "canceled": 0, "expired": 0},
            "ended_at": None, "created_at": _iso(now), "expires_at": _iso(now + 86400),
            "archived_at": None, "cancel_initiated_at": None, "results_url": None}, requests)
        return self._created(batch)

    def _finish_anthropic(self, batch: MockBatch, outcomes: list[str], origin: str) -> None:
        from assay.testing.mock_server import _to_anthropic_response

        counts = batch.body["request_counts"]
        counts["processing"] = 0
        for (custom_id, params), outcome in zip(batch.requests, outcomes, strict=True):
            result: dict[str, Any] = {"type": outcome}
            if outcome == "succeeded":
                result["message"] = self._answer(_to_anthropic_response(answer(params)),
                                                 counts.get("succeeded", 0))
            elif outcome == "errored":
                result["error"] = {"type": "error", "error": {
                    "type": "invalid_request_error", "message": "mock: this request errored"}}
            batch.results.append({"custom_id": custom_id, "result": result})
            counts[outcome] = counts.get(outcome, 0) + 1
        batch.body.update(processing_status="ended", ended_at=_iso(time.time()),
                          results_url=f"{origin}/v1/messages/batches/{batch.body['id']}/results")

    async def anthropic_results(self, request: web.Request) -> web.StreamResponse:
        batch = self.batches.get(request.match_info["id"])
        if batch is None or batch.kind != "anthropic":
            return _error("no such batch", 404)
        if batch.body["processing_status"] != "ended":
            return _error("the batch has not ended yet")
        return await _sent(request, b"".join(orjson.dumps(r) + b"\n" for r in batch.results)
                           + self._extra_lines(batch), "application/binary")

    # -- both ---------------------------------------------------------------------------

    async def list_openai(self, request: web.Request) -> web.Response:
        return self._listing(request, "openai", 100, "after", None, {"object": "list"})

    async def list_anthropic(self, request: web.Request) -> web.Response:
        return self._listing(request, "anthropic", 1000, "after_id", "before_id", {})

    def _listing(self, request: web.Request, kind: str, most: int, after: str,
                 before: str | None, extra: dict[str, Any]) -> web.Response:
        """A page of the ``kind`` batches, newest first: ``limit`` of them after (older
        than) the batch ``after`` names, or before (newer than) the one ``before`` names."""
        if not self.server.config.batch_listing:
            return _error("mock: this server does not list batches", 404)
        query = request.query
        try:
            limit = int(query.get("limit", "20"))
        except ValueError:
            limit = 0
        if not 1 <= limit <= most:
            return _error(f"limit must be an integer from 1 to {most}")
        found = [self._shown(b.body) for b in reversed(self.batches.values()) if b.kind == kind]
        ids = [b["id"] for b in found]
        cursor, older = (query.get(after), True) if query.get(after) else \
            (query.get(before or "") if before else None, False)
        if cursor is not None and cursor not in ids:
            return _error(f"no such batch: {cursor}", 404)
        if cursor is None:
            page, more = found[:limit], len(found) > limit
        elif older:
            rest = found[ids.index(cursor) + 1:]
            page, more = rest[:limit], len(rest) > limit
        else:
            rest = found[:ids.index(cursor)]
            page, more = rest[-limit:], len(rest) > limit
        return web.json_response({**extra, "data": page, "has_more": more,
                                  "first_id": page[0]["id"] if page else None,
                                  "last_id": page[-1]["id"] if page else None})

    def _created(self, batch: MockBatch) -> web.Response:
        self.batches[batch.body["id"]] = batch
        stats = self.server.stats
        stats.batches += 1
        stats.batch_requests += len(batch.requests)
        return web.json_response(self._shown(batch.body))

    async def retrieve(self, request: web.Request) -> web.Response:
        batch = self._found(request)
        if batch is None:
            return _error("no such batch", 404)
        if not self._ended(batch):
            batch.polls += 1
            if batch.cancelled or batch.polls > self.server.config.batch_polls:
                self._finish(batch, str(request.url.origin()))
            elif batch.kind == "openai":
                batch.body["status"] = "in_progress"
                batch.body["in_progress_at"] = batch.body["in_progress_at"] or int(time.time())
        return web.json_response(self._shown(batch.body))

    async def cancel(self, request: web.Request) -> web.Response:
        batch = self._found(request)
        if batch is None:
            return _error("no such batch", 404)
        if not self._ended(batch):
            batch.cancelled = True
            if batch.kind == "openai":
                batch.body["status"] = "cancelling"
            else:
                batch.body.update(processing_status="canceling",
                                  cancel_initiated_at=_iso(time.time()))
        return web.json_response(self._shown(batch.body))

    def _found(self, request: web.Request) -> MockBatch | None:
        batch = self.batches.get(request.match_info["id"])
        anthropic = request.path.startswith("/v1/messages/")
        if batch is None or (batch.kind == "anthropic") != anthropic:
            return None
        return batch

    @staticmethod
    def _ended(batch: MockBatch) -> bool:
        if batch.kind == "openai":
            return batch.body["status"] in ("completed", "failed", "expired", "cancelled")
        return batch.body["processing_status"] == "ended"

    def _finish(self, batch: MockBatch, origin: str) -> None:
        """End the batch as the configuration says: every request answered, errored or
        expired, or the whole batch expired, failed or cancelled."""
        config = self.server.config
        end = "cancelled" if batch.cancelled else config.batch_end
        n = len(batch.requests)
        if end == "completed":
            outcomes = ["errored" if i < config.batch_errored else
                        "expired" if i < config.batch_errored + config.batch_expired else
                        "succeeded" for i in range(n)]
        else:
            outcomes = [{"cancelled": "canceled", "failed": "errored"}.get(end, end)] * n
        if batch.kind == "openai":
            self._finish_openai(batch, [o.replace("canceled", "cancelled") for o in outcomes],
                                end)
        else:
            self._finish_anthropic(batch, outcomes, origin)


def _metadata_problem(metadata: Any) -> str | None:
    """Why a batch's ``metadata`` is refused, as OpenAI refuses it; None if fine."""
    if metadata is None:
        return None
    if not isinstance(metadata, dict) or len(metadata) > 16:
        return "metadata must be an object of at most 16 key-value pairs"
    for key, value in metadata.items():
        if len(key) > 64 or not isinstance(value, str) or len(value) > 512:
            return ("metadata keys must be at most 64 characters and values strings of at "
                    "most 512")
    return None


def _problem(requests: list[tuple[str, dict[str, Any]]]) -> str | None:
    """Why a batch's requests are refused (no request, a custom id twice); None if fine."""
    if not requests:
        return "a batch needs at least one request"
    ids = [custom_id for custom_id, _ in requests]
    if len(set(ids)) != len(ids):
        return "custom_id values must be unique within a batch"
    return None
