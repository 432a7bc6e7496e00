"""A pooled aiohttp session per event loop, shared by every HTTP provider.

One session with keep-alive connections is what makes the hot path cheap; a session is bound
to the loop that created it, so the synchronous wrapper (which runs its own loop) gets its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import time
import weakref

import aiohttp
import orjson

from assay.llm.types import (
    BadResponse,
    CallTimeout,
    ConnectionFailed,
    ProviderError,
    RateLimited,
    RequestRejected,
    ServerError,
)

_SESSIONS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aiohttp.ClientSession] = (
    weakref.WeakKeyDictionary()
)


def session() -> aiohttp.ClientSession:
    """The running loop's shared session, created on first use."""
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


async def post_json(url: str, body: dict[str, object], headers: dict[str, str],
                    timeout: float) -> dict[str, object]:
    """POST a JSON body and decode the JSON answer, mapping every failure to a ProviderError."""
    try:
        async with session().post(
            url,
            data=orjson.dumps(body),
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=timeout),
        ) as resp:
            payload = await resp.read()
            if resp.status >= 400:
                raise status_error(resp.status, resp.headers.get("Retry-After"), payload)
    except ProviderError:
        raise
    except TimeoutError:
        raise CallTimeout(f"no answer from {url} within {timeout:g}s") from None
    except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
        raise ConnectionFailed(f"connection to {url} failed: {type(exc).__name__}: {exc}") from None
    except aiohttp.ClientError as exc:
        raise ConnectionFailed(f"request to {url} failed: {type(exc).__name__}: {exc}") from None
    try:
        decoded = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise BadResponse(
            f"{url} answered with a body that is not JSON: {payload[:200]!r}"
        ) from None
    if not isinstance(decoded, dict):
        raise BadResponse(f"{url} answered with JSON that is not an object")
    return decoded


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
