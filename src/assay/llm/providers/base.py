"""The one interface every model provider implements, and the registry that names them."""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlparse

from assay import registry
from assay._util.redact import redact_url
from assay._util.user_code import user_code
from assay.errors import ConfigError
from assay.llm.models import ModelSpec
from assay.llm.pricing import PriceSource, price_source
from assay.llm.types import ChatRequest, ChatResponse

if TYPE_CHECKING:
    from assay.llm.batch import BatchAPI

StructuredMode = Literal["json_schema", "tools", "prompt"]

ProviderFactory = Callable[[ModelSpec], "Provider"]

register_provider = registry.provider
"""Register a factory under one or more provider prefixes (``openai``, ``local``...)."""

ANSWER_HEADERS = frozenset({"anthropic-version", "anthropic-beta", "openai-beta"})
"""Request headers that choose how a model answers (an API version, a beta feature): part of
a cache key. None of them is a credential."""


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

    @property
    def priced_model(self) -> str:
        """The model name its calls are priced by (the model that answers)."""
        return self.spec.model

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec

    def secrets(self) -> dict[str, str]:
        """Secret values this provider sends (keys, header values), each with the label it
        is shown as; the engine hides them in every error text."""
        return {}

    def cache_identity(self) -> dict[str, Any]:
        """Who answers: what the response cache keys an answer by besides the request (the
        provider and model, and for a server its endpoint URL and the headers that choose
        how it answers). Never a secret: a key, a password or a credential header changes
        who pays, not the answer. Providers that reach a server add its address."""
        return {"provider": self.spec.provider, "model": self.spec.display}

    def price_source(self) -> PriceSource | None:
        """Where this model's price is published (None: a server of one's own, priced only
        by ``$ASSAY_PRICES`` or ``EngineConfig.prices``)."""
        return price_source(self.spec.provider, getattr(self, "base_url", None))

    def batch_api(self) -> BatchAPI | None:
        """The provider's batch API (see :mod:`assay.llm.batch`); None: it has none, and a
        run with ``batch`` is refused before any call."""
        return None

    @abstractmethod
    async def complete(self, request: ChatRequest, timeout: float) -> ChatResponse:
        """Send one request; raise a :class:`assay.llm.types.ProviderError` on failure."""

    async def preflight(self) -> None:
        """Fail before any call when the provider cannot work (missing key, no server)."""

    async def aclose(self) -> None:
        """Release connections and models."""


def endpoint_identity(spec: ModelSpec, url: str,
                      headers: Mapping[str, str]) -> dict[str, Any]:
    """:meth:`Provider.cache_identity` of a provider that POSTs to ``url``: the URL with any
    credentials or secret query values hidden, and the headers of :data:`ANSWER_HEADERS`."""
    chosen = {k.lower(): v for k, v in headers.items() if k.lower() in ANSWER_HEADERS}
    return {"provider": spec.provider, "model": spec.display, "url": redact_url(url),
            "headers": chosen}


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
