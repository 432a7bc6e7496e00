"""The wire types of the judge engine: requests in, responses out, and transport errors.

Requests and responses are plain dicts in OpenAI chat-completions shape. Keeping them as dicts
(not SDK objects) is what keeps the hot path cheap, and it is the contract a user's own LLM
service plugs into: any async callable that takes the request dict and returns an
OpenAI-shaped response dict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict


class ChatRequest(TypedDict):
    """An OpenAI chat-completions request body, as judges build it."""

    model: str
    messages: list[dict[str, Any]]
    response_format: NotRequired[dict[str, Any]]
    tools: NotRequired[list[dict[str, Any]]]
    tool_choice: NotRequired[Any]
    max_tokens: NotRequired[int | None]
    temperature: NotRequired[float]
    seed: NotRequired[int]
    logprobs: NotRequired[bool]
    top_logprobs: NotRequired[int]


ChatResponse = dict[str, Any]
"""An OpenAI chat-completions response body: ``choices[0].message`` and ``usage``."""


@dataclass(slots=True)
class CallStats:
    """What one engine call cost: attempts, tokens, money, time, and whether it was cached."""

    attempts: int = 0
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    """Prompt tokens the provider read from its prompt cache (among ``prompt_tokens``)."""
    cache_write_tokens: int = 0
    """Prompt tokens the provider wrote to its prompt cache (among ``prompt_tokens``)."""
    cost: float | None = 0.0
    latency_ms: float = 0.0
    batch: bool = False
    """Answered through a provider's batch API (priced at its batch rate)."""


@dataclass(slots=True)
class ChatResult:
    """A response with the statistics of the call that produced it."""

    response: ChatResponse
    stats: CallStats = field(default_factory=CallStats)
    key: str = ""
    """The cache key of the request ("" without a cache)."""
    model: str = ""
    """The model as it may be shown (credentials hidden)."""

    def message(self) -> dict[str, Any]:
        choices = self.response.get("choices") or []
        if not choices:
            return {}
        return choices[0].get("message") or {}

    def text(self) -> str:
        content = self.message().get("content")
        if isinstance(content, list):
            return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        return content or ""

    def finish_reason(self) -> str | None:
        choices = self.response.get("choices") or []
        return choices[0].get("finish_reason") if choices else None


class ProviderError(Exception):
    """A call failed. ``retryable`` says whether trying again can help."""

    code = "provider_error"
    retryable = False

    def __init__(self, message: str, *, status: int | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after

    def scrubbed(self, scrub: Callable[[str], str]) -> ProviderError:
        """This error with ``scrub`` applied to its message (and its cause's): what the
        engine does to every error before it leaves, so no secret echoed by a provider
        reaches a score, a store or a terminal."""
        self.args = (scrub(str(self)),)
        last = getattr(self, "last", None)
        if isinstance(last, ProviderError) and last is not self:
            last.scrubbed(scrub)
        return self


DRY_RUN = "dry_run"
"""The code of the placeholder a dry run gives instead of calling a model."""


class RateLimited(ProviderError):
    code = "rate_limited"
    retryable = True


class ServerError(ProviderError):
    code = "server_error"
    retryable = True


class CallTimeout(ProviderError):
    code = "timeout"
    retryable = True


class ConnectionFailed(ProviderError):
    code = "connection_error"
    retryable = True


class BadResponse(ProviderError):
    """The provider answered, but not with a usable chat-completions body."""

    code = "bad_response"
    retryable = True


class ResponseTooLarge(ProviderError):
    """The answer is larger than the engine accepts; asking again would get the same."""

    code = "response_too_large"
    retryable = False


class RequestRejected(ProviderError):
    """A 4xx other than 429: the request itself is wrong; retrying will not help."""

    code = "request_rejected"
    retryable = False


class NotCached(ProviderError):
    """The model cannot be called now (no server, no key) and this call's answer is not in
    the response cache: the run went on from the cache, and only this call failed."""

    code = "not_cached"
    retryable = False


class RetriesExhausted(ProviderError):
    """Every allowed attempt failed; ``last`` is the final failure."""

    code = "retries_exhausted"

    def __init__(self, message: str, last: ProviderError, attempts: int) -> None:
        super().__init__(message, status=last.status)
        self.last = last
        self.attempts = attempts
