"""``custom:NAME``: any callable a user registers as an LLM service: async, or a plain
function, which runs in a worker thread so that it holds up no other call.

The callable receives the request dict in the shape UiPath documents for a custom LLM service:
``model``, ``messages`` (system and user), ``response_format`` (a JSON schema named
``evaluation_response`` for UiPath's judges) or ``tools`` and ``tool_choice`` (the function
``submit_evaluation``) when the service is registered with ``structured_mode="tools"``,
``max_tokens`` (always present, None when unset) and ``temperature``. ``model`` is the
service's name, or MODEL for ``custom:NAME#MODEL``, so a judge configured with UiPath's
``model: gpt-4o-2024-11-20`` reaches the service as written.

It returns an OpenAI-shaped response: a dict, an object with ``model_dump()`` (an SDK or
pydantic response), or any object whose attributes hold it (``response.choices[0].message``,
as UiPath's gateway objects and ``SimpleNamespace`` fakes do). A tool call's ``arguments`` may
be a dict or a JSON string, on the call or under ``function``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any

from assay.errors import ConfigError
from assay.llm.models import ModelSpec
from assay.llm.providers.base import Provider, StructuredMode, register_provider
from assay.llm.types import BadResponse, ChatRequest, ChatResponse

LLMService = Callable[..., Awaitable[Any]] | Callable[..., Any]
RequestShape = Callable[[dict[str, Any]], dict[str, Any]]
"""Rewrites the request a service receives into another framework's shape (UiPath's)."""
_SERVICES: dict[str, tuple[LLMService, StructuredMode, RequestShape | None]] = {}


def register_service(name: str, service: LLMService,
                     structured_mode: StructuredMode = "json_schema",
                     request_shape: RequestShape | None = None) -> str:
    """Register ``service`` and return the model string that uses it (``custom:NAME``).

    ``request_shape``, when given, receives the request body (``model``, ``max_tokens`` and
    ``temperature`` filled in) and returns the dict the service is called with.
    """
    if not callable(service):
        raise ConfigError(f"service {name!r} is not callable", code="invalid_service")
    _SERVICES[name] = (service, structured_mode, request_shape)
    return f"custom:{name}"


def _is_async(service: LLMService) -> bool:
    """Whether calling ``service`` gives an awaitable without running it: an ``async def``, a
    partial of one, or an object whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(service) or \
        inspect.iscoroutinefunction(type(service).__call__)


class CustomProvider(Provider):
    def __init__(self, spec: ModelSpec, service: LLMService, mode: StructuredMode,
                 request_shape: RequestShape | None = None) -> None:
        super().__init__(spec)
        self.service = service
        self.structured_mode = mode
        self.request_shape = request_shape
        params = list(inspect.signature(service).parameters.values())
        self._pass_dict = len(params) == 1 and params[0].kind in (
            inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD
        ) and params[0].name not in ("model", "messages")
        self._in_thread = not _is_async(service)

    async def _call(self, body: dict[str, Any]) -> Any:
        """The service's answer to ``body``: a plain function (``def``, not ``async def``)
        was awaited as it returned, 'object dict can't be used in 'await' expression' on
        every call; it runs in a worker thread, and what it returns is awaited only when it
        is awaitable."""
        def call() -> Any:
            return self.service(body) if self._pass_dict else self.service(**body)

        result = await asyncio.to_thread(call) if self._in_thread else call()
        return await result if inspect.isawaitable(result) else result

    async def complete(self, request: ChatRequest, timeout: float) -> ChatResponse:
        body: dict[str, Any] = dict(request)
        body["model"] = self.spec.requested_model or self.spec.model
        body.setdefault("max_tokens", None)
        body.setdefault("temperature", 0.0)
        if self.request_shape is not None:  # user code: the engine calls complete() as such
            body = self.request_shape(body)
        result = await self._call(body)
        result = plain(result)
        if not isinstance(result, dict):
            raise BadResponse(
                f"service {self.spec.model!r} returned {type(result).__name__}, "
                "expected an OpenAI-shaped response dict"
            )
        for choice in result.get("choices") or []:
            message = choice.get("message") if isinstance(choice, dict) else None
            if isinstance(message, dict) and isinstance(message.get("tool_calls"), list):
                message["tool_calls"] = [_openai_call(c) for c in message["tool_calls"]]
        return result


def _openai_call(call: Any) -> Any:
    """A gateway-shaped tool call (``{id, name, arguments}``) in OpenAI's shape."""
    if not isinstance(call, dict) or isinstance(call.get("function"), dict) or \
            "name" not in call:
        return call
    arguments = call.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {}, default=str)
    return {"id": call.get("id"), "type": "function",
            "function": {"name": call["name"], "arguments": arguments}}


def plain(value: Any, depth: int = 0) -> Any:
    """An SDK or attribute object as plain dicts and lists (bounded in depth)."""
    if depth > 32:
        return None
    if isinstance(value, dict):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v, depth + 1) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return plain(dump(), depth + 1)
    if hasattr(value, "__dict__"):
        return {k: plain(v, depth + 1) for k, v in vars(value).items()
                if not k.startswith("_")}
    return value


@register_provider("custom")
def _custom(spec: ModelSpec) -> Provider:
    if spec.model not in _SERVICES:
        known = ", ".join(sorted(_SERVICES)) or "none registered"
        raise ConfigError(
            f"no service named {spec.model!r}; register one with "
            f"assay.llm.register_service(name, fn) (registered: {known})",
            code="unknown_model",
        )
    service, mode, shape = _SERVICES[spec.model]
    return CustomProvider(spec, service, mode, shape)
