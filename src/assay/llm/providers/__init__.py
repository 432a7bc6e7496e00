"""Model providers. Built-in ones register on first use so optional extras stay optional."""

from __future__ import annotations

import importlib
import sys

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


async def close_http_session() -> None:
    """Close the running loop's pooled HTTP session, if an HTTP provider opened one.

    Asks ``sys.modules`` rather than importing: aiohttp takes a quarter of a second to import,
    and a run whose evaluators call no model should not pay for it on the way out.
    """
    http_session = sys.modules.get("assay.llm.providers.http_session")
    if http_session is not None:
        await http_session.close_session()


__all__ = ["Provider", "close_http_session", "create_provider", "load_builtin",
           "register_provider"]
