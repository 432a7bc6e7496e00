"""Model providers. Built-in ones register on first use so optional extras stay optional."""

from __future__ import annotations

import importlib

from assay.llm.providers.base import Provider, create_provider, register_provider

_BUILTIN_MODULES = {
    "openai": "openai_http",
    "azure": "openai_http",
    "ollama": "openai_http",
    "vllm": "openai_http",
    "lmstudio": "openai_http",
    "llamacpp": "openai_http",
    "http": "openai_http",
    "anthropic": "anthropic_http",
    "litellm": "litellm_provider",
    "local": "local",
    "fake": "fake",
    "custom": "custom",
    "target": "inline",
}


def load_builtin(provider: str) -> None:
    """Import the module of a built-in provider so its factory registers."""
    module = _BUILTIN_MODULES.get(provider)
    if module:
        importlib.import_module(f"assay.llm.providers.{module}")


__all__ = ["Provider", "create_provider", "load_builtin", "register_provider"]
