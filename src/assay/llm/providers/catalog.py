"""Which module defines each built-in provider prefix: the registry imports a provider's module
only when a model string names it, so optional backends (LiteLLM, the local llama.cpp model)
stay optional and a run imports only the HTTP client it uses.

Pure data, with no imports (see :mod:`assay.registry`).
"""

MODULES: dict[str, str] = {
    "openai": "assay.llm.providers.openai_http",
    "azure": "assay.llm.providers.openai_http",
    "ollama": "assay.llm.providers.openai_http",
    "vllm": "assay.llm.providers.openai_http",
    "lmstudio": "assay.llm.providers.openai_http",
    "llamacpp": "assay.llm.providers.openai_http",
    "http": "assay.llm.providers.openai_http",
    "anthropic": "assay.llm.providers.anthropic_http",
    "litellm": "assay.llm.providers.litellm_provider",
    "local": "assay.llm.providers.local",
    "fake": "assay.llm.providers.fake",
    "custom": "assay.llm.providers.custom",
    "target": "assay.llm.providers.inline",
}
"""Model-string prefix -> the module whose import registers its provider factory."""
