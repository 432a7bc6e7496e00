"""OpenAI-compatible chat completions over a pooled aiohttp session.

Covers OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp server, LM Studio and anything else that
speaks ``POST /chat/completions``. It sends dicts and decodes the answer with orjson, without
building SDK objects: that is most of what makes assay's hot path cheap.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from assay._util.redact import env_label, header_secrets, redact_url, url_secrets
from assay.errors import ConfigError
from assay.llm.models import OPENAI_COMPATIBLE, ModelSpec, base_url_for
from assay.llm.providers.base import (
    Provider,
    check_reachable,
    endpoint_identity,
    register_provider,
)
from assay.llm.providers.http_session import post_json, split_credentials
from assay.llm.types import BadResponse, ChatRequest, ChatResponse, ProviderError

if TYPE_CHECKING:
    from assay.llm.batch import BatchAPI

AZURE_DEFAULT_API_VERSION = "2024-10-21"


class OpenAIHTTPProvider(Provider):
    """A chat-completions endpoint with an optional bearer key."""

    def __init__(self, spec: ModelSpec, base_url: str, api_key: str | None,
                 key_env: str | None, headers: dict[str, str] | None = None,
                 url: str | None = None, key_label: str | None = None) -> None:
        super().__init__(spec)
        self._url_secrets = url_secrets(base_url)
        headers = {"Content-Type": "application/json", **(headers or {})}
        if api_key and "api-key" not in headers:
            headers["Authorization"] = f"Bearer {api_key}"
        try:
            # Credentials written into the URL travel as a header: the URL can then be shown.
            base_url, headers = split_credentials(base_url, headers)
            if url is not None:
                url, _ = split_credentials(url, {})
        except ProviderError:
            raise ConfigError(
                f"model {spec.display!r}: the base URL {redact_url(base_url)} carries "
                "credentials and an API key is set as well; use one of them",
                code="invalid_base_url") from None
        self.base_url = base_url.rstrip("/")
        self.url = url or f"{self.base_url}/chat/completions"
        self.key_env = key_env
        self.key_label = key_label or key_env
        self.api_key = api_key
        self.headers = headers

    def secrets(self) -> dict[str, str]:
        found = {value: label for value, label in header_secrets(self.headers).items()
                 if not self.api_key or self.api_key not in value}
        found.update(self._url_secrets)
        if self.api_key:
            found[self.api_key] = env_label(self.key_label) if self.key_label else "***"
        return found

    def cache_identity(self) -> dict[str, Any]:
        return endpoint_identity(self.spec, self.url, self.headers)

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """What is sent for ``request``: it with the model this endpoint serves."""
        body = dict(request)
        body["model"] = self.spec.model
        return body

    async def complete(self, request: ChatRequest, timeout: float) -> ChatResponse:
        response = await post_json(self.url, self.body(request), self.headers, timeout,
                                    self.max_response_bytes)
        if not response.get("choices"):
            raise BadResponse(f"{redact_url(self.url)} returned no choices")
        return response

    def batch_api(self) -> BatchAPI | None:
        """OpenAI's Batch API, for ``openai:`` models only (an OpenAI-compatible server of
        one's own, Azure and a base URL of another service have none assay speaks)."""
        if self.spec.provider != "openai":
            return None
        from assay.llm.providers.batches import OpenAIBatches

        return OpenAIBatches(self)

    async def preflight(self) -> None:
        if self.key_env and not self.api_key:
            raise ConfigError(
                f"model {self.spec.display!r} needs an API key: set the {self.key_env} "
                "environment variable",
                code="missing_api_key",
            )
        await check_reachable(self.base_url, f"model {self.spec.display!r}")


@register_provider("openai", "ollama", "vllm", "lmstudio", "llamacpp")
def _openai_compatible(spec: ModelSpec) -> Provider:
    _, url_env, key_env = OPENAI_COMPATIBLE[spec.provider]
    base_url = base_url_for(spec.provider)
    key = os.environ.get(key_env) if key_env else None
    # A custom OpenAI base URL (a proxy, a local server) may not need a key.
    label = key_env
    if spec.provider == "openai" and os.environ.get(url_env) and not key:
        key_env = None
    return OpenAIHTTPProvider(spec, base_url, key, key_env, key_label=label)


@register_provider("http")
def _base_url(spec: ModelSpec) -> Provider:
    key = os.environ.get("ASSAY_API_KEY") or None
    return OpenAIHTTPProvider(spec, spec.base_url or "", key, None, key_label="ASSAY_API_KEY")


@register_provider("azure")
def _azure(spec: ModelSpec) -> Provider:
    endpoint = os.environ.get("AZURE_OPENAI_ENDPOINT", "").rstrip("/")
    if not endpoint:
        raise ConfigError(
            f"model {spec.display!r} needs AZURE_OPENAI_ENDPOINT (https://NAME.openai.azure.com)",
            code="missing_endpoint",
        )
    version = os.environ.get("AZURE_OPENAI_API_VERSION", AZURE_DEFAULT_API_VERSION)
    key = os.environ.get("AZURE_OPENAI_API_KEY")
    url = f"{endpoint}/openai/deployments/{spec.model}/chat/completions?api-version={version}"
    headers = {"api-key": key} if key else {}
    return OpenAIHTTPProvider(spec, endpoint, key, "AZURE_OPENAI_API_KEY", headers, url=url)
