"""What every request passes through: the size limit, the token, the allowed hosts, no NUL in
its address, and the headers that keep the browser from running anything the data holds; and
what every JSON answer passes through: the scrub of known secrets.

These are plain ASGI middleware so that they apply before routing, to every path (a request
for an unknown path is refused for a missing token too, and answers nothing about the store).
A refusal is a JSON body ``{"detail": ..., "code": ...}`` like every other error (one to an
OTLP export in protobuf is encoded again as a ``google.rpc.Status``: ``otlp.ProtobufErrors``).
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

from assay._util.control_chars import quoted
from assay._util.redact import scrub_json_bytes
from assay.server.settings import BODY_IDLE_SECONDS, host_key

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'")
"""Only the UI's own files run: no inline script, no script from anywhere else, no frames."""

SECURITY_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]

PUBLIC_PATHS = ("/", "/index.html", "/favicon.ico", "/health", "/docs")
PUBLIC_PREFIXES = ("/static/",)
"""What needs no token: the UI's own files (they hold no data; the UI asks for the token) and
a health check that says only whether the store answers."""


async def send_error(send: Send, status: int, code: str, detail: str,
                     extra_headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"detail": detail, "code": code}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        *(extra_headers or []), *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})


class SecurityMiddleware:
    """Token, hosts and body size, checked before anything else; security headers added to
    every response."""

    def __init__(self, app: ASGIApp, token: str | None, max_body_bytes: int,
                 allowed_hosts: frozenset[str] | None,
                 body_limits: dict[str, int] | None = None,
                 body_idle_s: float = BODY_IDLE_SECONDS) -> None:
        self.app = app
        self.body_idle_s = body_idle_s
        self.token = token
        self.max_body_bytes = max_body_bytes
        self.allowed_hosts = allowed_hosts
        self.body_limits = body_limits or {}
        """Paths whose bodies have a limit of their own (OTLP exports are larger)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        if self.allowed_hosts is not None and not self._host_allowed(headers.get("host", "")):
            # Without a token the server trusts loopback (ServerSettings.allowed_hosts says why).
            await send_error(send, 421, "host_not_allowed",
                             "this server answers only requests addressed to localhost or "
                             "to the loopback address it listens on")
            return
        path = scope.get("path", "")
        if self.token is not None and not self._public(path) \
                and not self._authorized(headers.get("authorization", "")):
            await send_error(send, 401, "unauthorized",
                             "a bearer token is required: send 'Authorization: Bearer TOKEN' "
                             "with the server's ASSAY_SERVER_TOKEN",
                             [(b"www-authenticate", b'Bearer realm="assay"')])
            return
        holding = _holding_nul(scope)
        if holding is not None:
            await send_error(send, 400, "invalid_parameter",
                             f"{holding} holds a NUL character; nothing stored holds one, "
                             "and a database may refuse it")
            return
        limit = self.body_limits.get(path, self.max_body_bytes)
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                await send_error(send, 400, "bad_request", "Content-Length is not a number")
                return
            if int(length) > limit:
                await send_error(send, 413, "body_too_large",
                                 f"the request body is {length} bytes; the limit is "
                                 f"{limit}")
                return
        body = bytearray()
        more = True
        while more:  # bodies are small: read whole, counting, before the app sees any
            try:
                message = await asyncio.wait_for(receive(), self.body_idle_s)
            except TimeoutError:
                await send_error(send, 408, "request_timeout",
                                 f"the request body stopped arriving: nothing came for "
                                 f"{self.body_idle_s:g} s after {len(body)} bytes"
                                 + (f" of the {length} promised" if length else ""),
                                 [(b"connection", b"close")])
                return
            if message["type"] != "http.request":  # the client left before its body came
                return  # whole: nothing to answer, and nothing half-sent reaches the app
            body += message.get("body", b"")
            more = bool(message.get("more_body", False))
            if len(body) > limit:
                await send_error(send, 413, "body_too_large",
                                 f"the request body is over the limit of {limit} bytes")
                return
        await self.app(scope, _replay(bytes(body), receive), self._with_headers(send))

    def _public(self, path: str) -> bool:
        return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES) or \
            path == "/openapi.json"

    def _authorized(self, header: str) -> bool:
        scheme, _, given = header.partition(" ")
        assert self.token is not None
        return scheme.lower() == "bearer" and secrets.compare_digest(
            given.strip().encode(), self.token.encode())

    def _host_allowed(self, host: str) -> bool:
        assert self.allowed_hosts is not None
        name = host.rsplit(":", 1)[0] if not host.startswith("[") else \
            host.split("]")[0] + "]"
        return host_key(name) in self.allowed_hosts

    def _with_headers(self, send: Send) -> Send:
        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *(h for h in SECURITY_HEADERS if h[0] not in names)]
            await send(message)

        return wrapped


NO_NUL = "^[^\x00]*$"
"""The rule of :func:`_holding_nul`, as a JSON Schema pattern."""


def document_nul_rule(openapi: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI document with every text parameter (path and query) saying it holds no
    NUL, as the middleware enforces for every route."""
    for item in openapi.get("paths", {}).values():
        for operation in item.values():
            for parameter in operation.get("parameters", []) if isinstance(
                    operation, dict) else []:
                _no_nul_in(parameter.get("schema", {}))
    return openapi


def _no_nul_in(schema: dict[str, Any]) -> None:
    for branch in schema.get("anyOf", [schema]):
        if branch.get("type") == "string" and not {"pattern", "format", "enum"} & set(branch):
            branch["pattern"] = NO_NUL
        if branch.get("type") == "array":
            _no_nul_in(branch.get("items", {}))


def _holding_nul(scope: Scope) -> str | None:
    """Which part of a request's address holds a NUL (``%00``): the path, or a query
    parameter by name; None when none does. One rule for every route and parameter."""
    if "\x00" in scope.get("path", ""):
        return "the path"
    query = scope.get("query_string", b"").decode("latin-1")
    if "%00" not in query and "\x00" not in query:
        return None
    for name, value in parse_qsl(query, keep_blank_values=True):
        if "\x00" in name or "\x00" in value:
            return f"query parameter {quoted(name)}"
    return None


class ScrubbingMiddleware:
    """Every JSON answer with the secrets the process knows hidden in its strings (see
    :mod:`assay._util.redact`): the one place a response body leaves the application, whichever
    route or error handler made it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await rewriting_json(self.app, scope, receive, send,
                             lambda _start, body: scrub_json_bytes(body))


JsonRewrite = Callable[[Message, bytes], bytes]
"""What a JSON answer becomes: given its ``http.response.start`` message (whose headers it
may change) and its whole body, the body to send (the same object: unchanged)."""


async def rewriting_json(app: ASGIApp, scope: Scope, receive: Receive, send: Send,
                         rewrite: JsonRewrite) -> None:
    """Run ``app`` with every JSON answer it sends passed through ``rewrite``: the body is
    held until it is whole (a JSON answer is sent in one piece anyway) and its length set
    again when the rewrite changed it. Other answers pass as they are sent."""
    start: Message | None = None
    chunks: list[bytes] = []

    async def rewritten(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start" and _is_json(message):
            start = message
            return
        if message["type"] != "http.response.body" or start is None:
            await send(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        whole = b"".join(chunks)
        body = rewrite(start, whole)
        if body is not whole:
            start["headers"] = [*(h for h in start.get("headers", [])
                                  if h[0].lower() != b"content-length"),
                                (b"content-length", str(len(body)).encode())]
        await send(start)
        await send({"type": "http.response.body", "body": body})

    await app(scope, receive, rewritten)


def _is_json(start: Message) -> bool:
    return any(k.lower() == b"content-type" and v.split(b";")[0].strip().lower()
               == b"application/json" for k, v in start.get("headers", []))


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that gives the body read already, then passes on to the client's (a
    disconnect, for a streamed answer)."""
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replayed
