"""``anthropic:MODEL``: the Anthropic Messages API over the shared aiohttp session.

Requests arrive in chat-completions shape and are translated: system messages become the
``system`` field, a JSON-schema ``response_format`` becomes a forced tool call (Anthropic's
strongest structured-output mode), and the answer is translated back into an OpenAI-shaped
response so the engine and judges see one format.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from assay._util.redact import env_label, url_secrets
from assay.errors import ConfigError
from assay.llm.models import ModelSpec
from assay.llm.prompt_cache import EPHEMERAL, shared_end
from assay.llm.providers.base import (
    Provider,
    check_reachable,
    endpoint_identity,
    register_provider,
)
from assay.llm.providers.http_session import post_json, split_credentials
from assay.llm.types import BadResponse, ChatRequest, ChatResponse

if TYPE_CHECKING:
    from assay.llm.batch import BatchAPI

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024


def to_anthropic(request: ChatRequest, model: str) -> dict[str, Any]:
    """A Messages API body for a chat-completions request."""
    system = "\n\n".join(str(m.get("content") or "") for m in request["messages"]
                         if m["role"] in ("system", "developer"))
    messages = [{"role": "assistant" if m["role"] == "assistant" else "user",
                 "content": str(m.get("content") or "")}
                for m in request["messages"] if m["role"] not in ("system", "developer")]
    body: dict[str, Any] = {"model": model, "messages": messages,
                            "max_tokens": request.get("max_tokens") or DEFAULT_MAX_TOKENS,
                            "temperature": request.get("temperature", 0.0)}
    _mark_shared_prefix(body, system)
    fmt = request.get("response_format") or {}
    tools = request.get("tools") or []
    if fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema") or {}
        name = spec.get("name") or "evaluation_response"
        tools = [{"type": "function", "function": {"name": name,
                                                   "parameters": spec.get("schema") or {}}}]
        request = {**request, "tool_choice": {"type": "function", "function": {"name": name}}}
    if tools:
        body["tools"] = [{"name": t["function"]["name"],
                          "description": t["function"].get("description", ""),
                          "input_schema": t["function"].get("parameters") or {"type": "object"}}
                         for t in tools]
        choice = request.get("tool_choice")
        if isinstance(choice, dict) and choice.get("function"):
            body["tool_choice"] = {"type": "tool", "name": choice["function"]["name"]}
        elif choice in ("required", {"type": "required"}):
            body["tool_choice"] = {"type": "any"}
    return body


def _mark_shared_prefix(body: dict[str, Any], system: str) -> None:
    """Set the system prompt and one prompt-cache breakpoint where the part every case
    shares ends: after the instructions at the head of the first user message (before its
    first data frame, see :mod:`assay.llm.prompt_cache`), else after the system prompt.
    Everything before the breakpoint (tools, system, those instructions) is then read from
    Anthropic's cache by the next case, at a tenth of the price."""
    messages = body["messages"]
    first = messages[0] if messages else None
    end = shared_end(first["content"]) if first is not None and first["role"] == "user" else 0
    if end:
        text = first["content"]  # type: ignore[index]
        first["content"] = [  # type: ignore[index]
            {"type": "text", "text": text[:end], "cache_control": EPHEMERAL},
            {"type": "text", "text": text[end:]}]
    if system:
        block: dict[str, Any] = {"type": "text", "text": system}
        if not end:
            block["cache_control"] = EPHEMERAL
        body["system"] = [block]


def from_anthropic(response: dict[str, Any], model: str) -> ChatResponse:
    """An OpenAI-shaped response for a Messages API answer."""
    blocks = response.get("content")
    if not isinstance(blocks, list):
        raise BadResponse("Anthropic answer has no content list")
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    calls = [{"id": b.get("id"), "type": "function",
              "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input", {}))}}
             for b in blocks if b.get("type") == "tool_use"]
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    usage = response.get("usage") or {}
    stop = response.get("stop_reason")
    return {
        "id": response.get("id"), "object": "chat.completion", "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "length" if stop == "max_tokens" else
                     "tool_calls" if calls else "stop"}],
        "usage": _usage(usage if isinstance(usage, dict) else {}),
    }


def _usage(usage: dict[str, Any]) -> dict[str, Any]:
    """Anthropic's usage in OpenAI's terms: ``prompt_tokens`` counts every prompt token (the
    uncached ``input_tokens`` plus those read from and written to the prompt cache), and
    ``prompt_tokens_details`` says how many were read (``cached_tokens``, as OpenAI names
    them) and written (``cache_write_tokens``)."""
    def count(name: str) -> int:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) \
            and value > 0 else 0

    read, written = count("cache_read_input_tokens"), count("cache_creation_input_tokens")
    return {"prompt_tokens": count("input_tokens") + read + written,
            "completion_tokens": count("output_tokens"),
            "prompt_tokens_details": {"cached_tokens": read, "cache_write_tokens": written}}


class AnthropicProvider(Provider):
    structured_mode = "json_schema"  # translated into a forced tool call

    def __init__(self, spec: ModelSpec, *, api_key: str | None = None,
                 base_url: str | None = None, key_label: str = "ANTHROPIC_API_KEY") -> None:
        super().__init__(spec)
        base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or \
            "https://api.anthropic.com"
        self._url_secrets = url_secrets(base_url)
        self.api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        self.key_label = key_label
        headers = {"content-type": "application/json", "anthropic-version": API_VERSION,
                   "x-api-key": self.api_key or ""}
        base_url, self.headers = split_credentials(base_url, headers)
        self.base_url = base_url.rstrip("/")

    def secrets(self) -> dict[str, str]:
        found = dict(self._url_secrets)
        if self.api_key:
            found[self.api_key] = env_label(self.key_label)
        return found

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1/messages"

    def cache_identity(self) -> dict[str, Any]:
        return endpoint_identity(self.spec, self.url, self.headers)

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """What is sent for ``request``: a Messages API body."""
        return to_anthropic(request, self.spec.model)

    async def complete(self, request: ChatRequest, timeout: float) -> ChatResponse:
        answer = await post_json(self.url, self.body(request), self.headers, timeout,
                                 self.max_response_bytes)
        return from_anthropic(answer, self.spec.display)

    def batch_api(self) -> BatchAPI:
        """Anthropic's Message Batches."""
        from assay.llm.providers.batches import AnthropicBatches

        return AnthropicBatches(self)

    async def preflight(self) -> None:
        if not self.api_key:
            raise ConfigError(f"model {self.spec.display!r} needs an API key: set the "
                              "ANTHROPIC_API_KEY environment variable", code="missing_api_key")
        await check_reachable(self.base_url, f"model {self.spec.display!r}")


@register_provider("anthropic")
def _anthropic(spec: ModelSpec) -> Provider:
    return AnthropicProvider(spec)
