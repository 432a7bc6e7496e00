"""``target:NAME.DIGEST``: a chat model whose endpoint and key are written in a targets file.

AgentV's targets file gives a model its credentials inline::

    - name: azure_base
      provider: azure
      endpoint: ${{ AZURE_OPENAI_ENDPOINT }}
      api_key: ${{ AZURE_OPENAI_API_KEY }}
      model: gpt-4o                      # the deployment

The targets file registers such a model here when it is read (:func:`inline_model`) and names
it ``target:azure_base.1a2b3c4d``: the digest covers everything but the key, so two files with
a target of the same name never share a provider, and neither the key nor any other secret is
part of the name (which runs, caches and messages show). The provider built for it is the
ordinary one for its kind, given the written settings: Azure OpenAI (``endpoint`` or
``resource``, ``api_key``, ``api_version``), an OpenAI-compatible server (``base_url``,
``api_key``), Anthropic (``api_key``) or any LiteLLM provider (``gemini`` and the others,
``api_key`` and ``base_url`` passed to LiteLLM).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from assay.errors import ConfigError
from assay.llm.models import ModelSpec
from assay.llm.pricing import PriceSource
from assay.llm.providers.base import Provider, register_provider
from assay.llm.types import ChatRequest, ChatResponse

_MODELS: dict[str, tuple[str, str, dict[str, Any]]] = {}
"""``NAME.DIGEST`` -> (kind, model, settings)."""

AZURE_API_VERSION = "2024-12-01-preview"
"""AgentV's default Azure API version."""


def inline_model(name: str, kind: str, model: str, settings: dict[str, Any]) -> str:
    """Register a targets-file model and return its model string."""
    public = {k: v for k, v in settings.items() if "key" not in k.lower()}
    digest = hashlib.sha256(json.dumps([kind, model, public], sort_keys=True, default=str)
                            .encode()).hexdigest()[:8]
    ident = f"{name}.{digest}"
    _MODELS[ident] = (kind, model, dict(settings))
    return f"target:{ident}"


class InlineProvider(Provider):
    """The provider of a targets-file model: its name outside, an ordinary provider inside."""

    def __init__(self, spec: ModelSpec, inner: Provider) -> None:
        super().__init__(spec)
        self.inner = inner
        self.structured_mode = inner.structured_mode
        self.price_free = inner.price_free

    def secrets(self) -> dict[str, str]:
        return self.inner.secrets()

    @property
    def priced_model(self) -> str:
        return self.inner.priced_model  # the model behind the target's name answers

    def cache_identity(self) -> dict[str, Any]:
        return self.inner.cache_identity()  # the endpoint and model that answer

    def price_source(self) -> PriceSource | None:
        return self.inner.price_source()

    async def complete(self, request: ChatRequest, timeout: float) -> ChatResponse:
        self.inner.max_response_bytes = self.max_response_bytes
        return await self.inner.complete(request, timeout)

    async def preflight(self) -> None:
        await self.inner.preflight()

    async def aclose(self) -> None:
        await self.inner.aclose()


def _text(settings: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = settings.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _inner(ident: str, kind: str, model: str, settings: dict[str, Any]) -> Provider:
    key = _text(settings, "api_key", "apiKey")
    label = f"api_key of target {ident.rsplit('.', 1)[0]}"
    if kind == "azure":
        from assay.llm.providers.openai_http import OpenAIHTTPProvider

        endpoint = _text(settings, "endpoint", "resource", "resourceName")
        if endpoint is None:
            raise ConfigError(f"target {ident}: azure needs 'endpoint' (https://NAME.openai."
                              "azure.com, or the resource name)", code="missing_endpoint")
        if not endpoint.startswith(("http://", "https://")):
            endpoint = f"https://{endpoint}.openai.azure.com"
        endpoint = endpoint.rstrip("/")
        version = _text(settings, "api_version", "version") or AZURE_API_VERSION
        url = f"{endpoint}/openai/deployments/{model}/chat/completions?api-version={version}"
        return OpenAIHTTPProvider(ModelSpec("azure", model), endpoint, key, None,
                                  {"api-key": key} if key else {}, url=url, key_label=label)
    if kind == "anthropic":
        from assay.llm.providers.anthropic_http import AnthropicProvider

        return AnthropicProvider(ModelSpec("anthropic", model), api_key=key,
                                 base_url=_text(settings, "base_url", "endpoint"),
                                 key_label=label)
    if kind == "litellm":
        from assay.llm.providers.litellm_provider import LiteLLMProvider, _litellm

        base = _litellm(ModelSpec("litellm", model))
        assert isinstance(base, LiteLLMProvider)
        extra: dict[str, Any] = {}
        if key:
            extra["api_key"] = key
        api_base = _text(settings, "base_url", "endpoint")
        if api_base:
            extra["api_base"] = api_base
        return LiteLLMProvider(ModelSpec("litellm", model), base.litellm, extra)
    from assay.llm.models import base_url_for
    from assay.llm.providers.openai_http import OpenAIHTTPProvider

    base_url = _text(settings, "base_url", "endpoint") or base_url_for(
        kind if kind in ("openai", "ollama", "vllm", "lmstudio", "llamacpp") else "openai")
    return OpenAIHTTPProvider(ModelSpec(kind, model), base_url, key, None, key_label=label)


@register_provider("target")
def _target(spec: ModelSpec) -> Provider:
    found = _MODELS.get(spec.model)
    if found is None:
        raise ConfigError(f"model 'target:{spec.model}' names a model of a targets file that "
                          "was not read in this run; run with that targets file (--targets)",
                          code="unknown_model")
    kind, model, settings = found
    return InlineProvider(spec, _inner(spec.model, kind, model, settings))
