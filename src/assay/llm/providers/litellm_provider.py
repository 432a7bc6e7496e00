"""``litellm:PROVIDER/MODEL``: any model LiteLLM reaches (extra ``assay[litellm]``).

LiteLLM is convenient for providers assay does not speak natively; it is not on the hot path
for OpenAI-compatible servers, which the aiohttp provider serves far more cheaply.
"""

from __future__ import annotations

import os
from typing import Any

from assay._util.redact import redact_url
from assay.errors import ConfigError
from assay.llm.models import ModelSpec
from assay.llm.providers.base import Provider, register_provider
from assay.llm.types import (
    BadResponse,
    CallTimeout,
    ChatRequest,
    ChatResponse,
    ConnectionFailed,
    RateLimited,
    RequestRejected,
    ServerError,
)


class LiteLLMProvider(Provider):
    def __init__(self, spec: ModelSpec, litellm: Any,
                 extra: dict[str, Any] | None = None) -> None:
        super().__init__(spec)
        self.litellm = litellm
        self.extra = extra or {}
        """Sent with every call (an ``api_key`` or ``api_base`` from a targets file)."""

    def secrets(self) -> dict[str, str]:
        key = self.extra.get("api_key")
        return {key: "***"} if isinstance(key, str) and key else {}

    def cache_identity(self) -> dict[str, Any]:
        found = super().cache_identity()
        base = self.extra.get("api_base")
        if isinstance(base, str):
            found["url"] = redact_url(base)
        return found

    async def complete(self, request: ChatRequest, timeout: float) -> ChatResponse:
        body: dict[str, Any] = {**self.extra, **request}
        body["model"] = self.spec.model
        try:
            response = await self.litellm.acompletion(**body, timeout=timeout, num_retries=0)
        except Exception as exc:  # LiteLLM raises its own exception family
            raise _mapped(exc) from None
        data = response.model_dump() if hasattr(response, "model_dump") else dict(response)
        if not data.get("choices"):
            raise BadResponse(f"{self.spec.display} returned no choices")
        return data


def _mapped(exc: Exception) -> Exception:
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    message = f"{name}: {exc}"
    if status == 429 or "RateLimit" in name:
        return RateLimited(message, status=429)
    if "Timeout" in name:
        return CallTimeout(message)
    if "Connection" in name:
        return ConnectionFailed(message)
    if isinstance(status, int) and status >= 500:
        return ServerError(message, status=status)
    return RequestRejected(message, status=status)


@register_provider("litellm")
def _litellm(spec: ModelSpec) -> Provider:
    # LiteLLM fetches its price map from GitHub when imported, unless told to use the copy it
    # ships: assay downloads nothing at run time (and prices calls itself), so it is told,
    # unless the user chose otherwise.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError:
        raise ConfigError("the litellm provider needs LiteLLM: pip install 'assay[litellm]'",
                          code="missing_extra") from None
    return LiteLLMProvider(spec, litellm)
