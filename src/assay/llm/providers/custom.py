"""``custom:NAME``: any async callable a user registers as an LLM service.

The callable receives the request dict (model, messages, response_format, max_tokens,
temperature, and tools when used) and returns an OpenAI-shaped response: a dict, or an object
with ``model_dump()`` such as an SDK response.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from assay.errors import ConfigError
from assay.llm.models import ModelSpec
from assay.llm.providers.base import Provider, StructuredMode, register_provider
from assay.llm.types import BadResponse, ChatRequest, ChatResponse

LLMService = Callable[..., Awaitable[Any]]
_SERVICES: dict[str, tuple[LLMService, StructuredMode]] = {}


def register_service(name: str, service: LLMService,
                     structured_mode: StructuredMode = "json_schema") -> str:
    """Register ``service`` and return the model string that uses it (``custom:NAME``)."""
    if not callable(service):
        raise ConfigError(f"service {name!r} is not callable", code="invalid_service")
    _SERVICES[name] = (service, structured_mode)
    return f"custom:{name}"


class CustomProvider(Provider):
    def __init__(self, spec: ModelSpec, service: LLMService, mode: StructuredMode) -> None:
        super().__init__(spec)
        self.service = service
        self.structured_mode = mode
        params = list(inspect.signature(service).parameters.values())
        self._pass_dict = len(params) == 1 and params[0].kind in (
            inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD
        ) and params[0].name not in ("model", "messages")

    async def complete(self, request: ChatRequest, timeout: float) -> ChatResponse:
        body = dict(request)
        result = await (self.service(body) if self._pass_dict else self.service(**body))
        if hasattr(result, "model_dump"):
            result = result.model_dump()
        if not isinstance(result, dict):
            raise BadResponse(
                f"service {self.spec.model!r} returned {type(result).__name__}, "
                "expected an OpenAI-shaped response dict"
            )
        return result


@register_provider("custom")
def _custom(spec: ModelSpec) -> Provider:
    if spec.model not in _SERVICES:
        known = ", ".join(sorted(_SERVICES)) or "none registered"
        raise ConfigError(
            f"no service named {spec.model!r}; register one with "
            f"assay.llm.register_service(name, fn) (registered: {known})",
            code="unknown_model",
        )
    service, mode = _SERVICES[spec.model]
    return CustomProvider(spec, service, mode)
