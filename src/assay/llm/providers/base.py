"""The one interface every model provider implements, and the registry that names them."""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Literal
from urllib.parse import urlparse

from assay import registry
from assay._util.redact import redact_url
from assay._util.user_code import user_code
from assay.errors import ConfigError
from assay.llm.models import ModelSpec
from assay.llm.types import ChatRequest, ChatResponse

StructuredMode = Literal["json_schema", "tools", "prompt"]

ProviderFactory = Callable[[ModelSpec], "Provider"]

register_provider = registry.provider
"""Register a factory under one or more provider prefixes (``openai``, ``local``...)."""


def create_provider(spec: ModelSpec) -> Provider:
    """Build the provider for a parsed model; imports optional backends only when named, and
    looks installed plugins up for a prefix assay does not know."""
    factory: ProviderFactory | None = registry.REGISTRY.get("provider", spec.provider)
    if factory is None:
        raise ConfigError(
            f"no provider is registered for {spec.provider!r}; registered: "
            f"{', '.join(registry.REGISTRY.names('provider'))}",
            code="unknown_provider",
        )
    with user_code(f"the provider {spec.provider!r}"):  # a plugin's factory may exit
        return factory(spec)


class Provider(ABC):
    """Speaks to one model. ``complete`` takes and returns OpenAI-shaped dicts.

    ``structured_mode`` is the strongest way this provider can be made to return JSON that
    matches a schema; the engine degrades from it if the server refuses.
    """

    structured_mode: StructuredMode = "json_schema"
    price_free: bool = False
    max_response_bytes: int | None = None
    """Set by the engine: the largest answer an HTTP provider reads before failing the call."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec

    def secrets(self) -> dict[str, str]:
        """Secret values this provider sends (keys, header values), each with the label it
        is shown as; the engine hides them in every error text."""
        return {}

    @abstractmethod
    async def complete(self, request: ChatRequest, timeout: float) -> ChatResponse:
        """Send one request; raise a :class:`assay.llm.types.ProviderError` on failure."""

    async def preflight(self) -> None:
        """Fail before any call when the provider cannot work (missing key, no server)."""

    async def aclose(self) -> None:
        """Release connections and models."""


async def check_reachable(base_url: str, what: str, timeout: float = 5.0) -> None:
    """Open (and close) a TCP connection to the base URL's host, or raise ConfigError."""
    shown = redact_url(base_url)
    try:
        parsed = urlparse(base_url)
        host = parsed.hostname or ""
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
    except ValueError as exc:
        raise ConfigError(f"{what}: the base URL {shown} is not valid ({exc})",
                          code="invalid_base_url") from None
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except (OSError, TimeoutError) as exc:
        raise ConfigError(
            f"{what}: cannot reach {shown} ({type(exc).__name__}: {exc or 'timed out'}). "
            "Check the base URL and that the server is running.",
            code="unreachable_base_url",
        ) from None
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
