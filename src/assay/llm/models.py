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
    custom:NAME#MODEL                  the same service, asked for MODEL (the request's
                                       ``model`` is MODEL, written as the service names it)
    target:NAME.DIGEST                 a model whose endpoint and key a targets file gives
    http://127.0.0.1:8000/v1#MODEL     any OpenAI-compatible server at that base URL

``provider:/model`` (MLflow's spelling) means ``provider:model``. Credentials in a base URL
(``http://user:PASS@host/v1#m``) are used for requests but never shown: :attr:`ModelSpec.display`
is the form for messages, scores, stores and cache keys.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from assay._util.redact import REDACTED, redact_url, url_credentials
from assay.errors import ConfigError

LOCAL_DEFAULT_MODEL = "gemma-3-270m"
LOCAL_PACKAGED_NAMES = (LOCAL_DEFAULT_MODEL, "gemma3-270m", "default")
"""``local:`` names of the small model shipped with the ``local`` extra: a demo, not a judge."""
DEMO_MODEL_NOTE = (
    "the judge is the embedded 270M demo model (local:gemma-3-270m); its scores are not "
    "meaningful; use a capable judge model such as openai:gpt-4o-mini.")
"""One line for every summary and report whose judge is the demo model."""
FAKE_MODEL_NOTE = (
    "the judge is a fake (fake:NAME), assay's deterministic stand-in for tests and demos; "
    "its scores are not judgements; use a real judge model such as openai:gpt-4o-mini.")
"""One line for every summary and report whose judge is a ``fake:`` model."""

# provider -> (default base URL, env var overriding it, env var holding the key or None)
OPENAI_COMPATIBLE: dict[str, tuple[str, str, str | None]] = {
    "openai": ("https://api.openai.com/v1", "OPENAI_BASE_URL", "OPENAI_API_KEY"),
    "ollama": ("http://127.0.0.1:11434/v1", "OLLAMA_BASE_URL", None),
    "vllm": ("http://127.0.0.1:8000/v1", "VLLM_BASE_URL", None),
    "lmstudio": ("http://127.0.0.1:1234/v1", "LMSTUDIO_BASE_URL", None),
    "llamacpp": ("http://127.0.0.1:8080/v1", "LLAMACPP_BASE_URL", None),
}
OLLAMA_DEFAULT_PORT = 11434
KEY_ENV_VARS = ("ASSAY_API_KEY", "OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "ANTHROPIC_API_KEY")
"""Environment variables that hold judge API keys: their values are never shown."""
OTHER_PROVIDERS = ("azure", "anthropic", "litellm", "local", "fake", "custom", "http", "target")
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
        return _names(self)[0]

    @property
    def requested_model(self) -> str | None:
        """The model a ``custom:NAME#MODEL`` service is asked for (None: the service name)."""
        return dict(self.options).get("model")

    @property
    def display(self) -> str:
        """The name with any credentials of its URL hidden: what messages, scores, run
        records and cache keys use."""
        return _names(self)[1]


@functools.lru_cache(maxsize=256)
def _names(spec: ModelSpec) -> tuple[str, str]:
    """A spec's canonical name and its display form, worked out once per spec (both are
    asked for on every judge call)."""
    requested = dict(spec.options).get("model")
    if spec.provider == "http":
        name = f"{spec.base_url}#{spec.model}"
    elif requested is not None:
        name = f"{spec.provider}:{spec.model}#{requested}"
    else:
        name = f"{spec.provider}:{spec.model}"
    return name, (redact_url(name) if spec.provider == "http" else name)


def display_model(text: str) -> str:
    """A model string as it may be shown or stored (credentials in a URL hidden)."""
    return redact_url(text)


def is_demo_model(text: str | None) -> bool:
    """True for the embedded demo model (``local:gemma-3-270m``): its scores are not
    meaningful, and every report that uses it should say so."""
    if not text:
        return False
    try:
        spec = parse_model(text)
    except ConfigError:
        return False
    return spec.provider == "local" and spec.model in LOCAL_PACKAGED_NAMES


def is_fake_model(text: str | None) -> bool:
    """True for a ``fake:`` model: assay's deterministic stand-in, not a judge."""
    return bool(text) and str(text).strip().lower().startswith("fake:")


def judge_notes(models: Iterable[str | None]) -> list[str]:
    """What a reader of a verdict must be told about the judges that gave it: that the
    embedded demo model or a ``fake:`` model is not a real judge. Every surface that shows a
    verdict (run summaries, ``assay show``, reports, the Python result, ``assay judge``, a
    calibration, the pytest summary) shows these notes, from the judge models it recorded."""
    found = [m for m in models if m]
    notes = []
    if any(is_demo_model(m) for m in found):
        notes.append(DEMO_MODEL_NOTE)
    if any(is_fake_model(m) for m in found):
        notes.append(FAKE_MODEL_NOTE)
    return notes


def parse_model(text: str) -> ModelSpec:
    """Parse a model string, raising :class:`ConfigError` that lists the accepted forms."""
    value = (text or "").strip()
    if not value:
        raise ConfigError(_explain("an empty model name"), code="unknown_model")
    if value.startswith(("http://", "https://")):
        return _parse_url_model(value)
    provider, sep, model = value.partition(":")
    shown = redact_url(value)
    if not sep:
        raise ConfigError(
            _explain(f"model {shown!r} has no provider prefix{_slash_hint(value)}"),
            code="unknown_model")
    provider = provider.lower()
    if provider not in KNOWN_PROVIDERS and not _plugin_provider(provider):
        raise ConfigError(
            _explain(f"unknown provider {provider!r} in model {shown!r}"), code="unknown_provider"
        )
    if provider != "local":  # 'openai:/gpt-4o' (MLflow's form); a local path keeps its '/'
        model = model.removeprefix("/")
    if not model.strip():
        raise ConfigError(_explain(f"model {shown!r} names no model"), code="unknown_model")
    if provider == "custom" and "#" in model:
        service, _, requested = model.partition("#")
        if not service.strip() or not requested.strip():
            raise ConfigError(_explain(f"model {shown!r}: write custom:SERVICE#MODEL with "
                                       "both parts"), code="unknown_model")
        return ModelSpec(provider, service, options=(("model", requested),))
    return ModelSpec(provider, model)


RENAMABLE = frozenset({*OPENAI_COMPATIBLE, "azure", "anthropic", "litellm"})
"""Providers whose model is a name the service resolves, so another name can be asked for."""


AT_JUDGE_SERVICE = "#"
"""Starts a model string that is only a model name, ``#gpt-4o-2024-11-20``: that model at the
run's judge service (UiPath's bare model names; see :func:`at_judge_service`)."""


def at_judge_service(name: str) -> str:
    """The model string for a bare model name, asked of whichever service judges the run: a
    UiPath evaluator names its model the way its LLM service does and leaves the service to
    the platform, from a project file and from Python alike. Resolved when the judge is
    known (:func:`resolve_at_judge_service`)."""
    return AT_JUDGE_SERVICE + name


def resolve_at_judge_service(model: str, judge: str) -> str:
    """``model`` with a bare name (:func:`at_judge_service`) resolved against ``judge``, the
    run's judge model string; any other model unchanged."""
    if model.startswith(AT_JUDGE_SERVICE):
        return with_model_name(judge, model[len(AT_JUDGE_SERVICE):])
    return model


def with_model_name(service: str, name: str) -> str:
    """The model string that asks ``service``'s endpoint for the model ``name``.

    A UiPath evaluator names its model the way the LLM service does (``gpt-4o-2024-11-20``)
    and leaves the service to the platform; here the service is a model string (the run's
    judge), so ``http://host/v1#judge`` with ``gpt-4o-2024-11-20`` becomes
    ``http://host/v1#gpt-4o-2024-11-20`` and ``custom:svc`` becomes
    ``custom:svc#gpt-4o-2024-11-20``. Providers whose model is not a name at a service (the
    embedded ``local`` model, ``fake``) keep their own.
    """
    spec = parse_model(service)
    if spec.provider == "http":
        return f"{spec.base_url}#{name}"
    if spec.provider == "custom":
        return f"custom:{spec.model}#{name}"
    if spec.provider == "litellm" and "/" in spec.model:
        return f"litellm:{spec.model.split('/', 1)[0]}/{name}"
    if spec.provider in RENAMABLE:
        return f"{spec.provider}:{name}"
    return service


def _plugin_provider(name: str) -> bool:
    """Whether an installed plugin registered a provider by this name (asked only for names
    assay does not know, so built-in models never pay for the plugin lookup)."""
    from assay.registry import REGISTRY

    return REGISTRY.get("provider", name) is not None


def _parse_url_model(value: str) -> ModelSpec:
    """``http(s)://host[:port]/path#MODEL``, checked so a bad URL is a ConfigError."""
    url, sep, model = value.partition("#")
    shown = redact_url(value)
    if not sep or not model.strip():
        raise ConfigError(_explain(f"model {shown!r}: a base URL needs '#MODEL' after it"),
                          code="unknown_model")
    try:
        parts = urlsplit(url)
        port = parts.port  # raises for a port that is not a number from 0 to 65535
    except ValueError as exc:
        raise ConfigError(_explain(f"model {shown!r}: the base URL is not valid ({exc})"),
                          code="unknown_model") from None
    if not parts.hostname:
        raise ConfigError(_explain(f"model {shown!r}: the base URL names no host"),
                          code="unknown_model")
    if port == 0:
        raise ConfigError(_explain(f"model {shown!r}: port 0 is not a port to connect to"),
                          code="unknown_model")
    _, _, password = url_credentials(url)
    if password == REDACTED:
        raise ConfigError(
            f"model {shown!r}: its password was hidden when it was shown or stored, so it "
            "cannot be used to call the model. Give the model string with the real password "
            "again (for example with --judge-model), or put the key in ASSAY_API_KEY and "
            "leave it out of the URL.", code="redacted_credentials")
    return ModelSpec("http", model, base_url=url.rstrip("/"))


def base_url_for(provider: str, environ: Mapping[str, str] | None = None) -> str:
    """The base URL of an OpenAI-compatible provider: its ``*_BASE_URL`` variable, for Ollama
    also ``OLLAMA_HOST`` (``host[:port]``, scheme optional, as Ollama itself reads it), else
    the provider's usual local address."""
    env = os.environ if environ is None else environ
    default_url, url_env, _ = OPENAI_COMPATIBLE[provider]
    explicit = (env.get(url_env) or "").strip()
    if explicit:
        return explicit
    if provider == "ollama" and (env.get("OLLAMA_HOST") or "").strip():
        return ollama_host_url(env["OLLAMA_HOST"].strip())
    return default_url


def ollama_host_url(host: str) -> str:
    """The OpenAI-compatible base URL for an ``OLLAMA_HOST`` value.

    ``0.0.0.0:11434`` (a listen address) is reached at 127.0.0.1; with no scheme the scheme
    is http and a missing port is Ollama's 11434; with an explicit scheme a missing port is
    that scheme's own (80, 443), as Ollama's client reads it.
    """
    default_port = OLLAMA_DEFAULT_PORT
    if "://" in host:
        value = host
        default_port = 443 if host.lower().startswith("https://") else 80
    else:
        value = f"http://{host}"
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"OLLAMA_HOST {host!r} is not host[:port] ({exc})",
                          code="invalid_base_url") from None
    hostname = parts.hostname or "127.0.0.1"
    if hostname in ("0.0.0.0", "::"):
        hostname = "127.0.0.1"
    if ":" in hostname:
        hostname = f"[{hostname}]"
    path = parts.path.rstrip("/")
    if not path.endswith("/v1"):
        path += "/v1"
    return f"{parts.scheme or 'http'}://{hostname}:{port or default_port}{path}"


def _slash_hint(value: str) -> str:
    """For ``openai/gpt-4o-mini`` (LiteLLM's, Inspect's and promptfoo's way of writing a
    model), the same model as assay writes it; else nothing."""
    provider, slash, model = value.partition("/")
    if not slash or not model.strip() or provider.lower() not in KNOWN_PROVIDERS:
        return ""
    return f" (did you mean {f'{provider.lower()}:{model}'!r}? assay writes PROVIDER:MODEL)"


def _explain(problem: str) -> str:
    forms = ", ".join(f"{p}:MODEL" for p in KNOWN_PROVIDERS if p not in ("http", "target"))
    return (
        f"{problem}. Accepted: {forms}, or a base URL plus model such as "
        "'http://127.0.0.1:8000/v1#my-model'."
    )
