"""An HTTP endpoint as the agent: ``provider: http`` with ``url`` and optional ``headers``.

Each case is POSTed as an OpenAI-style ``{"messages": [...]}`` body (plus ``model`` and any
``body`` fields configured). The answer is read from ``choices[0].message`` (chat-completions
shape, tool calls kept) or from ``{"output": ...}`` (a plain agent API, which may also return
``messages``). Requests go through assay's shared aiohttp session. Agent calls are not
retried: an agent may not be idempotent, so a failed call is reported, not repeated.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from assay.llm.providers.http_session import post_json
from assay.llm.types import ProviderError
from assay.targets.base import Target
from assay.targets.config import TIMEOUT_FIELD, FieldSpec, TargetConfig
from assay.targets.inputs import assistant_message, elapsed_ms, input_messages
from assay.types.case import Case
from assay.types.execution import Execution, TokenUsage
from assay.types.messages import Message

DEFAULT_TIMEOUT_S = 120.0


class HttpTarget(Target):
    """POSTs each case to an endpoint."""

    FIELDS: ClassVar[dict[str, FieldSpec]] = {
        "url": FieldSpec((str,), "the endpoint URL, http:// or https://"),
        "headers": FieldSpec((dict,), "a mapping of header names to values"),
        "timeout_s": TIMEOUT_FIELD,
        "model": FieldSpec((str,), "a model name sent as the body's 'model'"),
        "body": FieldSpec((dict,), "a mapping of extra body fields"),
    }
    REQUIRED: ClassVar[tuple[tuple[str, ...], ...]] = (("url",),)

    def __init__(self, url: str, *, name: str = "http", headers: dict[str, str] | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, model: str | None = None,
                 body: dict[str, Any] | None = None,
                 scrub: Callable[[str], str] | None = None) -> None:
        self.url = url
        self.name = name
        self.headers = {"Content-Type": "application/json", **(headers or {})}
        self.timeout_s: float = timeout_s
        self.model = model
        self.body = body or {}
        self.scrub = scrub or (lambda text: text)

    @classmethod
    def from_config(cls, config: TargetConfig, base_dir: Path, engine: object = None
                    ) -> HttpTarget:
        headers = {str(k): str(v) for k, v in (config.get("headers") or {}).items()}
        return cls(str(config.get("url")), name=config.name, headers=headers,
                   timeout_s=float(config.get("timeout_s", DEFAULT_TIMEOUT_S)),
                   model=config.get("model"), body=config.get("body"), scrub=config.scrub)

    async def run(self, case: Case) -> Execution:
        return await self._post(case, {"messages": input_messages(case)})

    async def run_turn(self, case: Case, messages: list[Message], turn: int) -> Execution:
        """One conversation turn: ``{"messages": [...], "metadata": {"test_case_id",
        "turn_index"}}``; the reply holds the turn's assistant and tool messages
        (``{"messages": [...]}``), or is a chat completion or an ``{"output": ...}`` body."""
        turn_case = case.model_copy(update={"input": list(messages)})
        return await self._post(turn_case, {
            "messages": input_messages(turn_case),
            "metadata": {"test_case_id": case.id, "turn_index": turn}})

    async def _post(self, case: Case, payload: dict[str, Any]) -> Execution:
        body: dict[str, Any] = {**self.body, **payload}
        if self.model:
            body["model"] = self.model
        started = time.perf_counter()
        try:
            response = await post_json(self.url, body, self.headers, self.timeout_s)
        except ProviderError as exc:
            return Execution(input=case.input, latency_ms=elapsed_ms(started),
                             error=self.scrub(f"HTTP target failed: {exc}"))
        latency = elapsed_ms(started)
        try:
            return read_response(case, response, latency)
        except (ValueError, ValidationError) as exc:
            return Execution(input=case.input, latency_ms=latency,
                             error=self.scrub(f"HTTP target answered unusably: {exc}"))


def read_response(case: Case, response: dict[str, Any], latency_ms: float) -> Execution:
    """An execution from a chat-completions body or an ``{"output": ...}`` body."""
    usage = _usage(response.get("usage"))
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict) and isinstance(
            choices[0].get("message"), dict):
        message = assistant_message(choices[0]["message"])
        if message is None:
            raise ValueError("choices[0].message is not a chat message")
        output = message.content if isinstance(message.content, str) else (
            message.text() if message.content else None)
        return Execution(input=case.input, output=output, messages=[message],
                         latency_ms=latency_ms, usage=usage)
    if "output" in response:
        messages = [Message.model_validate(m) for m in response.get("messages") or []]
        return Execution(input=case.input, output=response["output"], messages=messages,
                         latency_ms=latency_ms, usage=usage)
    if isinstance(response.get("messages"), list) and response["messages"]:
        messages = [Message.model_validate(m) for m in response["messages"]]
        said = [m for m in messages if m.role == "assistant" and m.content is not None]
        return Execution(input=case.input, output=said[-1].text() if said else None,
                         messages=messages, latency_ms=latency_ms, usage=usage)
    keys = ", ".join(sorted(response)) or "none"
    raise ValueError(f"expected choices[0].message, an 'output' key or a 'messages' list, got "
                     f"keys: {keys}")


def _usage(raw: Any) -> TokenUsage | None:
    if not isinstance(raw, dict):
        return None
    prompt = raw.get("prompt_tokens", raw.get("input_tokens"))
    completion = raw.get("completion_tokens", raw.get("output_tokens"))
    if not isinstance(prompt, int) and not isinstance(completion, int):
        return None
    return TokenUsage(prompt_tokens=int(prompt or 0), completion_tokens=int(completion or 0))
