"""An OpenAI-compatible chat-completions server on 127.0.0.1 that answers deterministically.

It is a real HTTP server (aiohttp.web), so tests and benchmarks exercise assay's real client
path. It can add latency and inject faults by rate, and it counts what it saw::

    python -m assay.testing.mock_server --port 8766 --latency-ms 100 --fault 429=0.1

Its default port is 8766 (``assay serve``'s is 8765), so both run at once with their defaults.

Faults (``--fault KIND=RATE``, or ``MockConfig.faults``):

``429``, ``500``, ``503``, ``401``
    an error status; ``--echo-headers`` makes every error body quote the request's headers
    (API keys included), as careless proxies and servers do
``hang``, ``drop``
    no answer for ``--hang-s`` seconds; a connection closed without an answer
``invalid_json``, ``empty_choices``, ``truncated``
    a body that is not JSON; a completion with no choices; an answer cut off at max_tokens
``huge``
    a valid answer padded to ``--huge-bytes`` bytes (a judge that will not stop talking)
``drip``
    a valid answer sent one byte every ``--drip-interval`` seconds (a stalled stream)
``prose``
    a chatty answer in prose with the score in words, no JSON
``bool_score``
    the JSON answer with every ``score`` turned into ``true`` (a type a lax parser accepts)
``duplicate_score``
    the JSON answer with ``score`` named again at its end, with another value (an answer a
    lax parser reads as its last value)

``MockConfig.prompt_cache`` (``--prompt-cache``) reports prompt-cache reads and writes in the
usage, as OpenAI (``prompt_tokens_details.cached_tokens``) and Anthropic
(``cache_read_input_tokens``, ``cache_creation_input_tokens``, for a request that sets a
``cache_control`` breakpoint) do. Beyond faults, ``MockConfig.quote_headers`` makes every answer quote the request's headers in
its text (a successful answer that carries a key), and ``MockConfig.redirect_to`` answers every
chat request with a redirect (``redirect_status``, 307 unless set) to another URL.
``MockStats.credentials`` counts the credential headers of every request that arrived.

A chat request with ``"stream": true`` is answered as server-sent chunks (the whole message in
one delta, then the finish reason and usage, then ``[DONE]``), as streaming clients expect.

The batch APIs (OpenAI's ``/v1/files`` and ``/v1/batches``, Anthropic's
``/v1/messages/batches``) are served too, each request answered as a live call is; how a batch
ends is ``MockConfig``'s ``batch_*`` settings (see :mod:`assay.testing.mock_batches`).

Endpoints: ``POST /v1/chat/completions`` (also ``/chat/completions`` and Azure's
``/openai/deployments/{name}/chat/completions``), ``GET /v1/models``, ``GET /admin/stats``,
``POST /admin/reset``, ``POST /admin/config`` (a JSON :class:`MockConfig`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay._util.listening import bound_port, listen
from assay.errors import ConfigError
from assay.llm.providers.scripted import (
    answer,
    as_prose,
    quoting,
    with_bool_scores,
    with_duplicate_score,
)
from assay.testing.mock_batches import BatchEndpoints

CREDENTIAL_HEADERS = ("Authorization", "api-key", "x-api-key")
"""Where the providers send keys."""

DEFAULT_PORT = 8766
"""Not ``assay serve``'s 8765: both run at once with their defaults."""

FAULT_KINDS = ("429", "500", "503", "hang", "drop", "invalid_json", "truncated", "empty_choices",
               "401", "huge", "drip", "prose", "bool_score", "duplicate_score",
               "repeated_key")


class MockConfig(BaseModel):
    """How the server behaves. Fault rates are probabilities per request, summed <= 1.

    Strict, as it is also a request body (``POST /admin/config``): ``"yes"`` and ``1`` are
    not ``true``, nor ``"5"`` a number."""

    model_config = ConfigDict(extra="forbid", strict=True)

    latency_ms: float = 0.0
    latency_jitter_ms: float = 0.0
    faults: dict[str, float] = Field(default_factory=dict)
    max_faults_per_request: int | None = Field(
        default=None,
        description="a given request body fails at most this many times (transient faults)",
    )
    fault_budget: int | None = Field(
        default=None, description="inject at most this many faults in all, then none")
    retry_after_s: float | None = 0.0
    hang_s: float = 30.0
    seed: int = 0
    echo_headers: bool = Field(
        default=False, description="error bodies quote the request headers, keys included")
    quote_headers: bool = Field(
        default=False, description="answers quote the request headers, keys included, in "
        "their text (every string field of a JSON answer): a successful answer that carries "
        "a key, as a careless proxy or a prompt-injected judge could give")
    redirect_to: str | None = Field(
        default=None, description="answer every chat request with a redirect to this URL "
        "(a server that moved, or one that sends clients and their keys elsewhere); a "
        "request for this URL itself is answered")
    redirect_status: int = Field(default=307, ge=300, le=399,
                                 description="the status of those redirects")
    huge_bytes: int = Field(default=30 * 1024 * 1024, ge=0,
                            description="the size of a 'huge' answer")
    drip_interval_s: float = Field(default=0.05, ge=0,
                                   description="the pause between bytes of a 'drip' answer")
    logprobs: bool = Field(default=True, description="answer a request's 'logprobs' with "
                           "token log-probabilities; False: ignore it, as many servers do")
    prompt_cache: bool = Field(
        default=False, description="report prompt-cache reads and writes in the usage, as "
        "OpenAI and Anthropic do: a prompt prefix seen before is read from the cache (see "
        "MockServer._prompt_cached)")
    batch_polls: int = Field(
        default=0, ge=0, description="status requests that find a batch in progress before "
        "it ends (0: it ends when first asked)")
    batch_end: Literal["completed", "expired", "failed", "cancelled"] = Field(
        default="completed", description="how a whole batch ends")
    batch_errored: int = Field(
        default=0, ge=0, description="the first requests of each batch that error")
    batch_expired: int = Field(
        default=0, ge=0, description="the requests after those that expire")
    batch_listing: bool = Field(
        default=True, description="serve the listings of batches; False: answer them 404, "
        "as an OpenAI-compatible server that does not list batches does")
    file_delete_status: int | None = Field(
        default=None, ge=400, le=599, description="answer every file delete with this HTTP "
        "error status instead of deleting")
    batch_unavailable: bool = Field(
        default=False, description="answer every batch API request (files, batches) with "
        "503, as a provider that is down does")
    batch_result_lines: list[str] = Field(
        default_factory=list, description="raw lines added at the end of every finished "
        "batch's results (OpenAI's output file, Anthropic's results), as a broken or hostile "
        "provider gives them; '$custom_id' in a line is the batch's first request's custom id")
    batch_repeated_keys: int = Field(
        default=0, ge=0, description="the first requests of each batch whose answer, if it "
        "succeeds, names its content's key twice in the results (see repeated_key)")
    batch_body: dict[str, Any] = Field(
        default_factory=dict, description="fields laid over every batch object the server "
        "answers with (created, retrieved, cancelled, listed), as a broken or hostile "
        "provider reports them: an unknown status, odd 'errors', an id or file id that is "
        "not an id; the batch itself goes on as if they were not there")


@dataclass
class MockStats:
    """What the server saw since the last reset."""

    requests: int = 0
    completed: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    models: Counter[str] = field(default_factory=Counter)
    authorization: Counter[str] = field(default_factory=Counter)
    """How often each Authorization header value was sent (tests check credentials arrive)."""
    arrived: int = 0
    """Requests that arrived on any path and with any method, answered or not."""
    credentials: Counter[str] = field(default_factory=Counter)
    """``name: value`` of every credential header (Authorization, api-key, x-api-key) that
    arrived, on any path: what a test checks to know a key never reached a server."""
    paths: Counter[str] = field(default_factory=Counter)
    """``METHOD path`` of every request that arrived, as the server saw the path (a test
    checks that no request left the paths it meant)."""
    batches: int = 0
    """Batches created (OpenAI's and Anthropic's batch APIs)."""
    batch_requests: int = 0
    """Requests in those batches (not counted in ``requests``, the live calls)."""
    files_uploaded: int = 0
    """Files uploaded (OpenAI's ``POST /v1/files``)."""
    files_deleted: list[str] = field(default_factory=list)
    """The ids of the files deleted (``DELETE /v1/files/{id}``), in order."""
    batch_unavailable: int = 0
    """Batch API requests answered 503 (``MockConfig.batch_unavailable``)."""
    first_request_at: float | None = None
    """``time.monotonic()`` when the first request arrived. On Linux that clock is the
    system's, so a benchmark can set it against a client process's own times."""
    last_response_at: float | None = None
    """``time.monotonic()`` when the last request was answered."""
    in_flight_seconds: float = 0.0
    """Requests in flight integrated over time: divided by the time from the first request
    to the last answer, how many were in flight on average."""
    _changed_at: float = 0.0

    def arrive(self) -> None:
        now = time.monotonic()
        if self.first_request_at is None:
            self.first_request_at = self._changed_at = now
        self._tally(now)
        self.requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        now = self.last_response_at = time.monotonic()
        self._tally(now)
        self.in_flight -= 1

    def _tally(self, now: float) -> None:
        self.in_flight_seconds += self.in_flight * (now - self._changed_at)
        self._changed_at = now

    def as_dict(self) -> dict[str, Any]:
        span = (self.last_response_at - self.first_request_at
                if self.first_request_at is not None and self.last_response_at is not None
                else 0.0)
        return {
            "requests": self.requests,
            "completed": self.completed,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "first_request_at": self.first_request_at,
            "last_response_at": self.last_response_at,
            "mean_in_flight": self.in_flight_seconds / span if span > 0 else None,
            "faults": dict(self.faults),
            "fault_total": sum(self.faults.values()),
            "models": dict(self.models),
            "authorization": dict(self.authorization),
            "arrived": self.arrived,
            "credentials": dict(self.credentials),
            "batches": self.batches,
            "batch_requests": self.batch_requests,
            "files_uploaded": self.files_uploaded,
            "files_deleted": list(self.files_deleted),
            "batch_unavailable": self.batch_unavailable,
        }


class MockServer:
    """The server's state and handlers; :func:`serve_in_thread` runs it for tests."""

    def __init__(self, config: MockConfig | None = None) -> None:
        self.config = config or MockConfig()
        self.stats = MockStats()
        self._rng = random.Random(self.config.seed)
        self._failures: Counter[str] = Counter()
        self._prompt_cache: set[str] = set()
        """Prompt prefixes seen since the last reset (see :meth:`_prompt_cached`)."""
        self.batch_api = BatchEndpoints(self)
        """The batch APIs' files and batches (see :mod:`assay.testing.mock_batches`), kept
        across resets: a run collects its batch in a later test step."""

    def configure(self, config: MockConfig) -> None:
        self.config = config
        self._rng = random.Random(config.seed)
        self._failures.clear()

    def reset(self) -> None:
        self.stats = MockStats()
        self._failures.clear()
        self._prompt_cache.clear()
        self._rng = random.Random(self.config.seed)

    def app(self) -> web.Application:
        # As large a body as a provider takes: Anthropic's largest batch (256 MB), and an
        # OpenAI batch file (200 MB) with its multipart form around it.
        app = web.Application(client_max_size=257 * 1024 * 1024, middlewares=[self._witness])
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_post("/chat/completions", self.chat)
        app.router.add_post("/openai/deployments/{deployment}/chat/completions", self.chat)
        app.router.add_post("/v1/messages", self.messages)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/admin/stats", self.stats_handler)
        app.router.add_post("/admin/reset", self.reset_handler)
        app.router.add_post("/admin/config", self.config_handler)
        self.batch_api.routes(app)
        return app

    @web.middleware
    async def _witness(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Count every request and the credentials it carries, whatever it asks for."""
        self.stats.arrived += 1
        self.stats.paths[f"{request.method} {request.raw_path}"] += 1
        for name in CREDENTIAL_HEADERS:
            value = request.headers.get(name)
            if value is not None:
                self.stats.credentials[f"{name}: {value}"] += 1
        response: web.StreamResponse = await handler(request)
        return response

    def _pick_fault(self, body: bytes) -> str | None:
        faults = self.config.faults
        if not faults:
            return None
        roll = self._rng.random()
        chosen = None
        for kind in FAULT_KINDS:
            rate = faults.get(kind, 0.0)
            if roll < rate:
                chosen = kind
                break
            roll -= rate
        if chosen is None:
            return None
        budget = self.config.fault_budget
        if budget is not None and sum(self.stats.faults.values()) >= budget:
            return None
        limit = self.config.max_faults_per_request
        if limit is not None:
            key = hashlib.sha1(body).hexdigest()
            if self._failures[key] >= limit:
                return None
            self._failures[key] += 1
        return chosen

    async def chat(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, _same, _same)

    async def messages(self, request: web.Request) -> web.StreamResponse:
        """Anthropic's Messages API, answered by the same deterministic answers."""
        return await self._serve(request, _from_anthropic_request, _to_anthropic_response)

    async def _serve(self, request: web.Request, to_openai: Any,
                     from_openai: Any) -> web.StreamResponse:
        stats = self.stats
        stats.arrive()
        try:
            body = await request.read()
            try:
                payload = to_openai(orjson.loads(body))
            except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
                return web.json_response({"error": {"message": "malformed body"}}, status=400)
            problem = _invalid(payload)
            if problem:
                return web.json_response({"error": {"message": problem}}, status=400)
            stats.models[str(payload.get("model"))] += 1
            stats.authorization[request.headers.get("Authorization", "")] += 1
            if self.config.redirect_to not in (None, str(request.url)):
                return web.Response(status=self.config.redirect_status,
                                    headers={"Location": str(self.config.redirect_to)})
            delay = self.config.latency_ms
            if self.config.latency_jitter_ms:
                delay += self._rng.uniform(-1, 1) * self.config.latency_jitter_ms
            if delay > 0:
                await asyncio.sleep(max(0.0, delay) / 1000)
            fault = self._pick_fault(body)
            if fault is not None:
                stats.faults[fault] += 1
                if fault == "repeated_key":
                    return web.Response(body=repeated_key(from_openai(answer(payload))),
                                        content_type="application/json")
                return await self._fault(request, fault, payload)
            stats.completed += 1
            response = answer(payload)
            if self.config.prompt_cache:
                response = self._prompt_cached(payload, response)
            if not self.config.logprobs:
                response["choices"][0].pop("logprobs", None)
            if self.config.quote_headers:
                response = quoting(response, f"request headers were {dict(request.headers)}")
            if payload.get("stream") is True and from_openai is _same:
                return await _stream(request, response)
            return web.Response(body=orjson.dumps(from_openai(response)),
                                content_type="application/json")
        finally:
            stats.leave()

    def _prompt_cached(self, payload: dict[str, Any], response: dict[str, Any]
                       ) -> dict[str, Any]:
        """The answer's usage as a provider with a prompt cache reports it: a prefix seen
        before is read from the cache (``prompt_tokens_details.cached_tokens``), a new one
        written to it (``cache_write_tokens``, which Anthropic reports and bills apart).

        The prefix is the text up to an Anthropic request's last ``cache_control``
        breakpoint (none: nothing is cached, as on Anthropic), and for a chat-completions
        request its leading system messages (OpenAI caches on its own). Tokens are counted
        as characters / 4, and no prefix is too short to cache."""
        if "_cache_prefix" in payload:
            prefix, writes = payload["_cache_prefix"], True
        else:
            prefix, writes = "".join(
                str(m.get("content") or "") for m in _leading_system(payload["messages"])), False
        if not prefix:
            return response
        tokens = min(len(prefix) // 4, response["usage"]["prompt_tokens"])
        read = tokens if prefix in self._prompt_cache else 0
        self._prompt_cache.add(prefix)
        details = {"cached_tokens": read}
        if writes and not read:
            details["cache_write_tokens"] = tokens
        response["usage"]["prompt_tokens_details"] = details
        return response

    async def _fault(self, request: web.Request, fault: str,
                     payload: dict[str, Any]) -> web.StreamResponse:
        headers = {}
        if self.config.retry_after_s is not None:
            headers["Retry-After"] = f"{self.config.retry_after_s:g}"
        if fault in ("429", "500", "503", "401"):
            message = {"429": "rate limited", "401": "invalid credentials"}.get(
                fault, "server error")
            error: dict[str, Any] = {"message": message}
            if self.config.echo_headers:
                error["request_headers"] = dict(request.headers)
                error["message"] += f"; request headers were {dict(request.headers)}"
            return web.json_response({"error": error}, status=int(fault),
                                     headers=headers if fault == "429" else None)
        if fault == "huge":
            return await self._huge(request, answer(payload))
        if fault == "drip":
            return await self._drip(request, orjson.dumps(answer(payload)))
        if fault == "prose":
            return web.Response(body=orjson.dumps(as_prose(answer(payload))),
                                content_type="application/json")
        if fault == "bool_score":
            return web.Response(body=orjson.dumps(with_bool_scores(answer(payload))),
                                content_type="application/json")
        if fault == "duplicate_score":
            return web.Response(body=orjson.dumps(with_duplicate_score(answer(payload))),
                                content_type="application/json")
        if fault == "hang":
            await asyncio.sleep(self.config.hang_s)
            return web.json_response({"error": {"message": "hung"}}, status=504)
        if fault == "drop":
            if request.transport is not None:
                request.transport.close()
            raise asyncio.CancelledError
        if fault == "invalid_json":
            return web.Response(text='{"choices": [ {"message": ', content_type="application/json")
        if fault == "empty_choices":
            return web.json_response({"id": "x", "object": "chat.completion", "choices": []})
        full = answer(payload)
        message = full["choices"][0]["message"]
        if message.get("content"):
            message["content"] = message["content"][: len(message["content"]) // 2]
        for call in message.get("tool_calls") or []:
            args = call["function"]["arguments"]
            call["function"]["arguments"] = args[: len(args) // 2]
        full["choices"][0]["finish_reason"] = "length"
        return web.Response(body=orjson.dumps(full), content_type="application/json")

    async def _huge(self, request: web.Request, full: dict[str, Any]) -> web.StreamResponse:
        """A valid answer padded to ``huge_bytes``, streamed in chunks with no length declared
        (so a client must bound what it reads), without ever holding it whole."""
        marker = "\u0000PAD\u0000"
        body = orjson.dumps(_with_marker(full, marker))
        head, _, tail = body.partition(orjson.dumps(marker)[1:-1])
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        await response.write(head)
        chunk = b" " * 65536
        left = self.config.huge_bytes
        try:
            while left > 0:
                await response.write(chunk[:left])
                left -= len(chunk)
            await response.write(tail)
            await response.write_eof()
        except (ConnectionError, RuntimeError):  # the client stopped reading: as it should
            pass
        return response

    async def _drip(self, request: web.Request, body: bytes) -> web.StreamResponse:
        """Send ``body`` one byte at a time, pausing between bytes."""
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.content_length = len(body)
        await response.prepare(request)
        for i in range(len(body)):
            await response.write(body[i:i + 1])
            await asyncio.sleep(self.config.drip_interval_s)
        await response.write_eof()
        return response

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "mock", "object": "model"}]})

    async def stats_handler(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats.as_dict())

    async def reset_handler(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"ok": True})

    async def config_handler(self, request: web.Request) -> web.Response:
        try:
            config = MockConfig.model_validate(await request.json())
        except (ValidationError, ValueError) as exc:  # not JSON, or not a MockConfig
            return web.json_response({"error": {"message": f"not a mock config: {exc}"}},
                                     status=400)
        self.configure(config)
        self.reset()
        return web.json_response(self.config.model_dump())


def _same(value: Any) -> Any:
    return value


async def _stream(request: web.Request, full: dict[str, Any]) -> web.StreamResponse:
    """``full`` as the chunks of a streamed chat completion (``stream: true``, which clients
    such as AgentV's send): the whole message in one delta, then the finish reason with the
    usage, then ``[DONE]``."""
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    choice = full["choices"][0]
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant"}
    if message.get("content") is not None:
        delta["content"] = message["content"]
    if message.get("tool_calls"):
        delta["tool_calls"] = [{**call, "index": i}
                               for i, call in enumerate(message["tool_calls"])]
    head = {k: full[k] for k in ("id", "created", "model")}
    for chunk in ({**head, "object": "chat.completion.chunk",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                  {**head, "object": "chat.completion.chunk", "usage": full["usage"],
                   "choices": [{"index": 0, "delta": {},
                                "finish_reason": choice["finish_reason"]}]}):
        await response.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


def repeated_key(response: dict[str, Any]) -> bytes:
    """An answer as JSON naming its content's key twice: ``choices`` (chat completions) or
    ``content`` (Anthropic's Messages) once more ahead of the real one, holding an empty
    list. A reader that keeps the last value sees the real answer and nothing amiss, as a
    broken proxy that merges two answers would leave it."""
    key = "choices" if "choices" in response else "content"
    return b"{" + orjson.dumps(key) + b":[]," + orjson.dumps(response)[1:]


def _with_marker(response: dict[str, Any], marker: str) -> dict[str, Any]:
    """The answer with ``marker`` appended to its text, where padding is streamed in."""
    message = response["choices"][0]["message"]
    for call in message.get("tool_calls") or []:
        call["function"]["arguments"] += marker
    if message.get("content") is not None:
        message["content"] += marker
    return response


def _block_text(content: Any) -> str:
    """A Messages API content (a text, or a list of blocks) as one text."""
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


def _from_anthropic_request(body: dict[str, Any]) -> dict[str, Any]:
    messages = [{**m, "content": _block_text(m.get("content"))} for m in body["messages"]]
    if body.get("system"):
        messages.insert(0, {"role": "system", "content": _block_text(body["system"])})
    request: dict[str, Any] = {"model": body.get("model"), "messages": messages,
                               "_cache_prefix": _anthropic_breakpoint(body)}
    tools = body.get("tools") or []
    if tools:
        request["tools"] = [{"type": "function", "function": {
            "name": t["name"], "parameters": t.get("input_schema")}} for t in tools]
        choice = body.get("tool_choice") or {}
        if choice.get("type") == "tool":
            request["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
        elif choice.get("type") == "any":
            request["tool_choice"] = "required"
    return request


def _anthropic_breakpoint(body: dict[str, Any]) -> str | None:
    """The text up to the last ``cache_control`` breakpoint of a Messages API body (system
    blocks, then the messages' blocks, in order); None when it sets none."""
    seen: list[str] = []
    prefix = None
    system = body.get("system")
    blocks = [*(system if isinstance(system, list) else [{"text": system or ""}])]
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        blocks += content if isinstance(content, list) else [{"text": content or ""}]
    for block in blocks:
        if not isinstance(block, dict):
            continue
        seen.append(str(block.get("text", "")))
        if block.get("cache_control"):
            prefix = "".join(seen)
    return prefix


def _to_anthropic_response(response: dict[str, Any]) -> dict[str, Any]:
    message = response["choices"][0]["message"]
    blocks: list[dict[str, Any]] = []
    if message.get("content"):
        blocks.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or []:
        try:
            arguments = orjson.loads(call["function"]["arguments"])
        except orjson.JSONDecodeError:
            arguments = {}
        blocks.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"],
                       "input": arguments})
    usage = response["usage"]
    details = usage.get("prompt_tokens_details") or {}
    read, written = details.get("cached_tokens", 0), details.get("cache_write_tokens", 0)
    return {"id": response["id"], "type": "message", "role": "assistant", "content": blocks,
            "stop_reason": "tool_use" if message.get("tool_calls") else "end_turn",
            "usage": {"input_tokens": usage["prompt_tokens"] - read - written,
                      "cache_read_input_tokens": read, "cache_creation_input_tokens": written,
                      "output_tokens": usage["completion_tokens"]}}


def _leading_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for message in messages:
        if message.get("role") not in ("system", "developer"):
            break
        found.append(message)
    return found


def _invalid(payload: Any) -> str | None:
    """Why a chat-completions body is malformed, as a real server would say; None if fine."""
    if not isinstance(payload, dict):
        return "body must be a JSON object"
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty list"
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or "role" not in message:
            return f"messages[{i}] must be an object with a 'role'"
    return None


class RunningServer:
    """A mock server running on its own thread and loop; ``url`` is its ``/v1`` base URL."""

    def __init__(self, server: MockServer, host: str, port: int) -> None:
        self.server = server
        self.host = host
        self.port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def stats(self) -> MockStats:
        return self.server.stats

    def configure(self, **changes: Any) -> None:
        self.server.configure(self.server.config.model_copy(update=changes))
        self.server.reset()

    def start(self) -> RunningServer:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                self._runner = web.AppRunner(self.server.app(), access_log=None,
                                             handle_signals=False)
                loop.run_until_complete(self._runner.setup())
                site = web.TCPSite(self._runner, self.host, self.port, backlog=1024)
                loop.run_until_complete(site.start())
                sockets = getattr(site._server, "sockets", None) or []
                if sockets:
                    self.port = sockets[0].getsockname()[1]
            except BaseException as exc:  # reported to the starting thread
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="assay-mock-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> RunningServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_in_thread(config: MockConfig | None = None, host: str = "127.0.0.1",
                    port: int = 0) -> RunningServer:
    """Start a mock server on a free port in a background thread."""
    return RunningServer(MockServer(config), host, port).start()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("Endpoints:")[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"default: {DEFAULT_PORT}")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--latency-jitter-ms", type=float, default=0.0)
    parser.add_argument("--fault", action="append", default=[],
                        help=f"KIND=RATE, KIND one of {', '.join(FAULT_KINDS)}")
    parser.add_argument("--max-faults-per-request", type=int, default=None)
    parser.add_argument("--fault-budget", type=int, default=None,
                        help="inject at most this many faults in all, then none")
    parser.add_argument("--retry-after", type=float, default=0.0)
    parser.add_argument("--hang-s", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--echo-headers", action="store_true",
                        help="error bodies (429, 500, 503, 401) quote the request headers, "
                        "API keys included")
    parser.add_argument("--huge-bytes", type=int, default=30 * 1024 * 1024,
                        help="size of a 'huge' answer in bytes")
    parser.add_argument("--drip-interval", type=float, default=0.05,
                        help="seconds between the bytes of a 'drip' answer")
    parser.add_argument("--prompt-cache", action="store_true",
                        help="report prompt-cache reads and writes in the usage, as OpenAI "
                        "and Anthropic do")
    args = parser.parse_args(argv)
    faults = {}
    for item in args.fault:
        kind, _, rate = item.partition("=")
        if kind not in FAULT_KINDS:
            parser.error(f"--fault {item!r}: kind must be one of {', '.join(FAULT_KINDS)}")
        try:
            faults[kind] = float(rate)
        except ValueError:
            parser.error(f"--fault {item!r}: RATE must be a number between 0 and 1")
    config = MockConfig(latency_ms=args.latency_ms, latency_jitter_ms=args.latency_jitter_ms,
                        faults=faults, max_faults_per_request=args.max_faults_per_request,
                        fault_budget=args.fault_budget,
                        retry_after_s=args.retry_after, hang_s=args.hang_s, seed=args.seed,
                        echo_headers=args.echo_headers, huge_bytes=args.huge_bytes,
                        drip_interval_s=args.drip_interval, prompt_cache=args.prompt_cache)
    server = MockServer(config)
    try:  # bound first: a port in use is one line, before anything says where it serves
        sock = listen(args.host, args.port)
    except ConfigError as exc:
        parser.exit(2, f"{parser.prog}: error: {exc.message}\n")
    shown = f"[{args.host}]" if ":" in args.host else args.host
    banner = f"mock server on http://{shown}:{bound_port(sock)}/v1"
    with contextlib.suppress(KeyboardInterrupt):
        web.run_app(server.app(), sock=sock, access_log=None,
                    print=lambda *_: print(banner, flush=True))


if __name__ == "__main__":
    main()
