"""A pooled aiohttp session per event loop, shared by every HTTP provider.

One session with keep-alive connections is what makes the hot path cheap; a session is bound
to the loop that created it, so the synchronous wrapper (which runs its own loop) gets its own.
aiohttp is imported by the first request, not with this module: a run whose every answer
comes from the response cache never loads it (a fifth of a second, with its TLS contexts).

Redirects are followed by :func:`post_json` itself, within the origin a request was sent to
only (see :func:`redirect_target`): a key is never sent to another server.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import email.utils
import time
import weakref
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

import orjson

from assay._util import jsondata
from assay._util.redact import redact_url, url_credentials
from assay.llm.types import (
    BadResponse,
    CallTimeout,
    ConnectionFailed,
    ProviderError,
    RateLimited,
    RequestRejected,
    ResponseTooLarge,
    ServerError,
)

if TYPE_CHECKING:
    import aiohttp

MAX_REDIRECTS = 5
"""Redirects one request follows (within its origin) before it fails."""
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""The most any answer may hold when the caller sets no bound of its own."""
ERROR_BODY_BYTES = 16 * 1024
"""How much of an error answer is read: enough for its message, never a flood."""

_SESSIONS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aiohttp.ClientSession] = (
    weakref.WeakKeyDictionary()
)


def session() -> aiohttp.ClientSession:
    """The running loop's shared session, created on first use."""
    import aiohttp

    loop = asyncio.get_running_loop()
    current = _SESSIONS.get(loop)
    if current is None or current.closed:
        connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, keepalive_timeout=30)
        current = aiohttp.ClientSession(
            connector=connector,
            json_serialize=lambda v: orjson.dumps(v).decode(),
            skip_auto_headers=("User-Agent",),
        )
        _SESSIONS[loop] = current
    return current


async def close_session() -> None:
    """Close the running loop's session, if any."""
    with contextlib.suppress(RuntimeError):
        loop = asyncio.get_running_loop()
        current = _SESSIONS.pop(loop, None)
        if current is not None and not current.closed:
            await current.close()


def split_credentials(url: str, headers: dict[str, str]) -> tuple[str, dict[str, str]]:
    """``url`` without user info, and ``headers`` with that user info as Basic auth.

    Credentials in a URL are sent as an ``Authorization`` header instead, so the URL itself
    can appear in messages. A URL with credentials and an explicit ``Authorization`` header
    is ambiguous and refused.
    """
    clean, user, password = url_credentials(url)
    if user is None and password is None:
        return url, headers
    if any(name.lower() == "authorization" for name in headers):
        raise RequestRejected(f"{redact_url(url)} carries credentials and an Authorization "
                              "header is set as well; use one of them")
    token = base64.b64encode(f"{user or ''}:{password or ''}".encode()).decode()
    return clean, {**headers, "Authorization": f"Basic {token}"}


async def post_json(url: str, body: dict[str, object], headers: dict[str, str],
                    timeout: float, max_bytes: int | None = None) -> dict[str, object]:
    """:func:`post_json_value` for an answer that must be a JSON object."""
    decoded = await post_json_value(url, body, headers, timeout, max_bytes)
    if not isinstance(decoded, dict):
        raise BadResponse(f"{redact_url(url)} answered with JSON that is not an object")
    return decoded


async def post_json_value(url: str, body: dict[str, object], headers: dict[str, str],
                          timeout: float, max_bytes: int | None = None) -> object:
    """POST a JSON body and decode the JSON answer, mapping every failure to a ProviderError.

    The answer is read up to ``max_bytes``; a larger one fails the call with
    :class:`ResponseTooLarge` before it is held in memory. A redirect is followed, as a POST
    with the same body and headers, only within the origin (see :func:`redirect_target`);
    ``timeout`` bounds the whole call, redirects included. Messages show the URL without
    credentials.
    """
    payload = await exchange("POST", url, orjson.dumps(body), headers, timeout, max_bytes)
    return decode_json(url, payload)


def decode_json(url: str, payload: bytes) -> object:
    """The JSON value of an answer from ``url``; :class:`BadResponse` when it is not JSON, or
    when it names a key twice in one object (``{"choices": [...], "choices": [...]}``): which
    of the two a reader keeps is its own choice, so the answer says two things and neither
    is judged. orjson reads the answer (strictly: no NaN, no lone surrogates) and
    :func:`~assay._util.jsondata.refuse_repeated_keys` looks for a repeated key, ~10 us of a
    call."""
    try:
        found = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise BadResponse(
            f"{redact_url(url)} answered with a body that is not JSON: {payload[:200]!r}"
        ) from None
    try:
        jsondata.refuse_repeated_keys(payload)
    except jsondata.DuplicateKey as exc:
        raise BadResponse(f"{redact_url(url)} answered with JSON that names a key twice, "
                          f"so it says two things: {exc}") from None
    return found


async def exchange(method: str, url: str, data: bytes | None, headers: dict[str, str],
                   timeout: float, max_bytes: int | None = None) -> bytes:
    """One HTTP request (``data``: its body, None for none) and the answer's body, read up to
    ``max_bytes``, under the rules of :func:`post_json_value`: redirects within the origin
    only, ``timeout`` over the whole call, every failure a ProviderError.

    Every live judge call comes here, so the steps are plain calls (:func:`_ask`,
    :func:`_followed`, :func:`_failure`) rather than a generator-based context manager,
    which cost 18 us a call (11%) when measured."""
    limit = max_bytes or DEFAULT_MAX_BYTES
    url, headers = split_credentials(url, headers)
    deadline = time.monotonic() + timeout
    try:
        for _ in range(MAX_REDIRECTS + 1):
            async with _ask(method, url, data, headers, deadline) as resp:
                if (elsewhere := await _followed(url, resp)) is None:
                    return await _read_bounded(resp, limit)
                url = elsewhere
        raise _too_many_redirects(url)
    except Exception as exc:
        failure = _failure(exc, url, timeout)
        if failure is exc:
            raise
        raise failure from None


async def exchange_lines(method: str, url: str, headers: dict[str, str], timeout: float,
                         max_bytes: int, max_line: int) -> AsyncGenerator[bytes | None, None]:
    """:func:`exchange` for an answer read a line at a time (a JSON Lines file of any size
    in bounded memory): each line as it arrives, without its newline (only a newline ends a
    line, as :mod:`assay._util.jsonlines` says), or None for one longer than ``max_line``
    bytes, which is dropped as it arrives. More than ``max_bytes`` in all fails the call with
    :class:`ResponseTooLarge`. Close it (``contextlib.aclosing``) when leaving it early, so
    its connection is let go at once."""
    url, headers = split_credentials(url, headers)
    deadline = time.monotonic() + timeout
    try:
        for _ in range(MAX_REDIRECTS + 1):
            async with _ask(method, url, None, headers, deadline) as resp:
                if (elsewhere := await _followed(url, resp)) is None:
                    async for line in _lines(resp, max_bytes, max_line):
                        yield line
                    return
                url = elsewhere
        raise _too_many_redirects(url)
    except Exception as exc:
        failure = _failure(exc, url, timeout)
        if failure is exc:
            raise
        raise failure from None


async def _lines(resp: aiohttp.ClientResponse, max_bytes: int,
                 max_line: int) -> AsyncGenerator[bytes | None, None]:
    """The lines of an open answer, as :func:`exchange_lines` gives them."""
    declared = resp.content_length
    if declared is not None and declared > max_bytes:
        raise ResponseTooLarge(_too_large(declared, max_bytes))
    pending = bytearray()
    size, overlong = 0, False
    async for chunk in resp.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > max_bytes:
            raise ResponseTooLarge(_too_large(size, max_bytes, at_least=True))
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            overlong = overlong or len(pending) + end - start > max_line
            yield None if overlong else \
                bytes(pending) + chunk[start:end] if pending else chunk[start:end]
            pending.clear()
            overlong, start = False, end + 1
        overlong = overlong or len(pending) + len(chunk) - start > max_line
        if overlong:
            pending.clear()
        else:
            pending += chunk[start:]
    if pending or overlong:
        yield None if overlong else bytes(pending)


def _ask(method: str, url: str, data: bytes | None, headers: dict[str, str],
         deadline: float) -> Any:
    """The request, as aiohttp's context manager for its answer: no redirect followed by
    aiohttp (:func:`_followed` decides), the time left of the call's ``timeout`` over it all,
    reading the body included."""
    import aiohttp

    return session().request(
        method, url, data=data, headers=headers, allow_redirects=False,
        timeout=aiohttp.ClientTimeout(total=max(deadline - time.monotonic(), 0.001)))


async def _followed(url: str, resp: aiohttp.ClientResponse) -> str | None:
    """Where a redirect answer leads (within the origin only), None for an answer to read;
    an error status is raised as its ProviderError."""
    if resp.status in REDIRECT_STATUSES:
        return redirect_target(url, resp.status, resp.headers.get("Location"))
    if resp.status >= 400:
        payload = await _read_bounded(resp, ERROR_BODY_BYTES, truncate=True)
        raise status_error(resp.status, resp.headers.get("Retry-After"), payload)
    return None


def _too_many_redirects(url: str) -> RequestRejected:
    return RequestRejected(f"{redact_url(url)} redirected more than {MAX_REDIRECTS} times; "
                           "point the model at the address that answers")


def _failure(exc: Exception, url: str, timeout: float) -> Exception:
    """The ProviderError a failed call raises (``exc`` itself when it is one already, or is
    not a failure of the call: a bug is not hidden as a connection error)."""
    import aiohttp

    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, TimeoutError):
        return CallTimeout(f"no answer from {redact_url(url)} within {timeout:g}s")
    if isinstance(exc, aiohttp.ClientConnectionError | aiohttp.ClientPayloadError):
        return ConnectionFailed(
            f"connection to {redact_url(url)} failed: {type(exc).__name__}: {exc}")
    if isinstance(exc, aiohttp.ClientError):
        return ConnectionFailed(
            f"request to {redact_url(url)} failed: {type(exc).__name__}: {exc}")
    if isinstance(exc, ValueError):  # aiohttp's own checks of a URL or header
        return RequestRejected(f"request to {redact_url(url)} is not valid: {exc}")
    return exc


def redirect_target(url: str, status: int, location: str | None) -> str:
    """Where a redirect from ``url`` leads, if assay follows it: the same origin (scheme, host
    and port) only; one to another origin is refused with :class:`RequestRejected`.

    Why refuse rather than follow without the key: a request carries its credentials in
    headers the provider or a targets file chose (``Authorization``, ``api-key``,
    ``x-api-key``, any custom header whose value is a token), and no rule can tell them all
    from harmless ones, so stripping would leak the one it missed; and an endpoint that sends
    its callers elsewhere is either misconfigured or hostile, where the key should not go
    either. A model that moved is pointed at its new address instead, which the error says.
    A redirect within the origin reaches the server the key was meant for: it is followed
    with the method and body kept (a POST turned into a GET would ask nothing).
    """
    from yarl import URL

    if not location:
        raise RequestRejected(f"{redact_url(url)} answered HTTP {status} (a redirect) without "
                              "saying where to", status=status)
    here = URL(url)
    try:
        there = here.join(URL(location))
        origin = (there.scheme, there.host, there.port)
    except ValueError:
        raise RequestRejected(f"{redact_url(url)} redirected (HTTP {status}) to a location "
                              f"that is not a URL: {redact_url(location)[:200]!r}",
                              status=status) from None
    if origin != (here.scheme, here.host, here.port):
        shown = redact_url(str(there.with_query(None).with_fragment(None)))
        raise RequestRejected(
            f"{redact_url(url)} redirected (HTTP {status}) to another origin, {shown}; assay "
            "does not follow it, since the request carries credentials. If the endpoint "
            "moved, point the model (or the target) at its new address", status=status)
    return str(there)


async def _read_bounded(resp: aiohttp.ClientResponse, limit: int,
                        truncate: bool = False) -> bytes:
    """The body, at most ``limit`` bytes: cut there (``truncate``) or fail the call."""
    declared = resp.content_length
    if declared is not None and declared > limit and not truncate:
        raise ResponseTooLarge(_too_large(declared, limit))
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(64 * 1024):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            if truncate:
                return b"".join(chunks)[:limit]
            raise ResponseTooLarge(_too_large(size, limit, at_least=True))
    return b"".join(chunks)


def _too_large(size: int, limit: int, at_least: bool = False) -> str:
    more = "more than " if at_least else ""
    return f"the answer is {more}{size:,} bytes, over the limit of {limit:,} bytes"


def status_error(status: int, retry_after: str | None, payload: bytes) -> ProviderError:
    """The ProviderError for an HTTP error status, keeping the body's message."""
    snippet = payload[:500].decode("utf-8", "replace")
    delay = parse_retry_after(retry_after)
    if status == 429:
        return RateLimited(f"HTTP 429: {snippet}", status=status, retry_after=delay)
    if status >= 500 or status in (408, 409):
        return ServerError(f"HTTP {status}: {snippet}", status=status, retry_after=delay)
    return RequestRejected(f"HTTP {status}: {snippet}", status=status)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
