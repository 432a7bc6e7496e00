"""The two llama.cpp bindings the ``local:`` provider runs a GGUF model on, behind one interface.

- ``xllamacpp`` (the default): a prebuilt CPU llama.cpp in a manylinux/macOS/Windows wheel
  (MIT), so ``pip install 'assay[local]'`` compiles nothing. It embeds llama.cpp's own server:
  a request is an OpenAI chat request and the JSON schema is enforced by LLGuidance.
- ``llama-cpp-python``: compiled from source where no xllamacpp wheel installs (extra
  ``assay[local-llama-cpp]``); the schema becomes a GBNF grammar.

``$ASSAY_LOCAL_BACKEND`` names one; unset, xllamacpp is used when it is installed, else
llama-cpp-python. Both take the same request (:class:`LocalRequest`) and answer the same
OpenAI-shaped response, so the provider's behaviour does not depend on which one runs: the same
Gemma chat turns, the same grammar (one optional space between JSON tokens, no property the
schema does not name), token counts, a too-long prompt refused as a
:class:`~assay.llm.types.RequestRejected`.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import orjson

from assay.errors import ConfigError
from assay.llm.types import ChatResponse, ProviderError, RequestRejected

BACKEND_ENV = "ASSAY_LOCAL_BACKEND"
XLLAMACPP = "xllamacpp"
LLAMA_CPP_PYTHON = "llama-cpp-python"
BACKENDS = (XLLAMACPP, LLAMA_CPP_PYTHON)
"""In the order they are preferred."""
_MODULES = {XLLAMACPP: "xllamacpp", LLAMA_CPP_PYTHON: "llama_cpp"}


@dataclass(frozen=True)
class LoadOptions:
    """How a model is loaded: the same on both backends."""

    path: Path
    chat_format: str | None
    """``gemma`` for a model whose file carries no chat template; None uses the file's own."""
    n_ctx: int
    n_threads: int
    logits_all: bool = False
    """llama-cpp-python only: keep every token's logits, which its log-probabilities need."""


@dataclass(frozen=True)
class LocalRequest:
    """One chat completion, already prepared by the provider (system turns merged, schema
    bounded)."""

    messages: list[dict[str, Any]]
    temperature: float
    max_tokens: int
    seed: int
    schema: dict[str, Any] | None = None
    top_logprobs: int | None = None
    """None: no log-probabilities; else how many alternatives at each token."""


def installed() -> list[str]:
    """The backends importable here, in the order they are preferred."""
    return [name for name in BACKENDS if importlib.util.find_spec(_MODULES[name]) is not None]


def chosen() -> str:
    """The backend ``$ASSAY_LOCAL_BACKEND`` names, else the first one installed."""
    wanted = os.environ.get(BACKEND_ENV, "").strip()
    if wanted and wanted not in BACKENDS:
        raise ConfigError(f"{BACKEND_ENV}={wanted!r}: expected one of {', '.join(BACKENDS)}",
                          code="invalid_config")
    found = installed()
    if wanted:
        if wanted not in found:
            raise ConfigError(f"{BACKEND_ENV}={wanted} but {wanted} is not installed: "
                              f"{_install_hint(wanted)}", code="missing_extra")
        return wanted
    if not found:
        raise ConfigError("the local provider needs llama.cpp: pip install 'assay[local]' "
                          "(or bash scripts/setup.sh)", code="missing_extra")
    return found[0]


def _install_hint(name: str) -> str:
    return ("pip install 'assay[local]'" if name == XLLAMACPP
            else "ASSAY_LOCAL_BACKEND=llama-cpp-python bash scripts/setup.sh")


class LocalBackend(ABC):
    """One loaded model. ``complete`` is called one request at a time (the provider holds
    :attr:`lock`), from a worker thread."""

    name: ClassVar[str]
    gives_logprobs: bool = False

    def __init__(self) -> None:
        self.lock = threading.Lock()

    @abstractmethod
    def complete(self, request: LocalRequest) -> ChatResponse:
        """Answer one request as an OpenAI chat completion (``choices``, ``usage``)."""

    @abstractmethod
    def close(self) -> None:
        """Free the model."""


def load(backend: str, options: LoadOptions) -> LocalBackend:
    """Load ``options.path`` on ``backend`` (a name from :data:`BACKENDS`)."""
    if backend == XLLAMACPP:
        return XLlamaCppBackend(options)
    return LlamaCppPythonBackend(options)


class XLlamaCppBackend(LocalBackend):
    """llama.cpp's server in-process (xllamacpp). It also listens for HTTP, which assay never
    uses: on a Unix socket in a directory only this user can open, never on a TCP port.

    Loading holds the GIL for the second or two llama.cpp takes (xllamacpp's constructor does
    not release it), once per model and process."""

    name = XLLAMACPP
    gives_logprobs = True  # llama.cpp's server ranks the alternatives itself, in C++

    def __init__(self, options: LoadOptions) -> None:
        super().__init__()
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = str(options.path)
        params.n_ctx = options.n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = options.n_threads
        params.cpuparams_batch.n_threads = options.n_threads
        params.verbosity = -1  # llama.cpp logs every request to stderr otherwise
        if options.chat_format is not None:
            params.chat_template = options.chat_format  # a built-in template's name,
            params.use_jinja = False  # which a Jinja template would take as its text
        self._socket_dir = tempfile.mkdtemp(prefix="assay-llama-")
        params.hostnames = [os.path.join(self._socket_dir, "server.sock")]
        try:
            self._server: Any = xllamacpp.Server(params)
        except Exception as exc:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            raise ConfigError(f"llama.cpp could not load {options.path}: {exc}",
                              code="unknown_model") from None

    def complete(self, request: LocalRequest) -> ChatResponse:
        body: dict[str, Any] = {"messages": request.messages,
                                "temperature": request.temperature,
                                "max_tokens": request.max_tokens, "seed": request.seed}
        if request.schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "answer", "schema": _llguidance_schema(request.schema)}}
        if request.top_logprobs is not None:
            body["logprobs"] = True
            body["top_logprobs"] = request.top_logprobs
        response: dict[str, Any] = self._server.handle_chat_completions(body)
        error = response.get("error") or (response if "choices" not in response else None)
        if error is not None:
            raise _server_error(error)
        if request.schema is not None:
            _check_constrained(response)
        return response

    def close(self) -> None:
        self._server = None  # xllamacpp stops the server and frees the model
        shutil.rmtree(self._socket_dir, ignore_errors=True)


NUMBER_STEP = 1e-6
"""The finest fraction a number in an xllamacpp answer takes (``multipleOf``): LLGuidance
bounds no number's digits, and a small model can write ``0.000...`` until max_tokens, where
llama-cpp-python's grammar stops at 16 digits."""
_LITERALS = frozenset({"enum", "const", "default", "examples"})


def _llguidance_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with LLGuidance's options set as llama-cpp-python's grammar behaves: at most
    one space between JSON tokens (not any run of whitespace, which a small model can fill
    until max_tokens), numbers of bounded length, and keywords it cannot enforce (a
    ``format`` it does not know, ``uniqueItems``) ignored rather than the whole constraint
    dropped."""
    options = {"whitespace_pattern": " ?", "lenient": True}
    bounded = _numbers_bounded(schema)
    return {**bounded, "x-guidance": {**options, **(schema.get("x-guidance") or {})}}


def _numbers_bounded(schema: Any) -> Any:
    """Every ``number`` schema without a ``multipleOf`` given :data:`NUMBER_STEP`."""
    if isinstance(schema, list):
        return [_numbers_bounded(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: value if key in _LITERALS else _numbers_bounded(value)
           for key, value in schema.items()}
    kind = out.get("type")
    if (kind == "number" or (isinstance(kind, list) and "number" in kind)) \
            and "multipleOf" not in out:
        out["multipleOf"] = NUMBER_STEP
    return out


def _server_error(error: Any) -> ProviderError:
    """llama.cpp's error answer as an error: a request it refuses (a prompt longer than the
    context) as :class:`RequestRejected`, anything else as a failed call."""
    if not isinstance(error, dict):
        return ProviderError(f"local model failed: {error}")
    message = str(error.get("message") or error)
    if 400 <= int(error.get("code") or 500) < 500:
        return RequestRejected(f"local model refused the request: {message}")
    return ProviderError(f"local model failed: {message}")


def _check_constrained(response: dict[str, Any]) -> None:
    """Refuse an answer that is not JSON: llama.cpp drops a schema it cannot compile and
    answers unconstrained, with no error. An answer cut off at max_tokens is checked by its
    start (constrained, it begins with the JSON value), the caller says it was cut off."""
    choice = (response.get("choices") or [{}])[0]
    content = (choice.get("message") or {}).get("content") or ""
    if choice.get("finish_reason") == "length":
        constrained = not content or content[0] in _JSON_STARTS
    else:
        try:
            orjson.loads(content)
            constrained = True
        except orjson.JSONDecodeError:
            constrained = False
    if not constrained:
        raise RequestRejected(
            "local model: llama.cpp could not turn the answer's schema into a grammar, so the "
            f"answer was not constrained (it began {content[:80]!r})")


_JSON_STARTS = frozenset('{["-0123456789tfn')


class LlamaCppPythonBackend(LocalBackend):
    """llama-cpp-python, compiled from source."""

    name = LLAMA_CPP_PYTHON
    _quiet: ClassVar[list[Any]] = []

    def __init__(self, options: LoadOptions) -> None:
        super().__init__()
        import llama_cpp

        if not self._quiet:  # llama.cpp logs to stderr even with verbose=False
            callback = llama_cpp.llama_log_callback(lambda level, text, data: None)
            llama_cpp.llama_log_set(callback, None)
            self._quiet.append(callback)  # keep a reference so it is not collected
        self.gives_logprobs = options.logits_all
        self._llama: Any = llama_cpp.Llama(
            chat_format=options.chat_format, model_path=str(options.path),
            n_ctx=options.n_ctx, n_threads=options.n_threads, seed=0, verbose=False,
            logits_all=options.logits_all)

    def complete(self, request: LocalRequest) -> ChatResponse:
        kwargs: dict[str, Any] = {"messages": request.messages,
                                  "temperature": request.temperature,
                                  "max_tokens": request.max_tokens, "seed": request.seed}
        if request.schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": request.schema}
        if request.top_logprobs is not None and self.gives_logprobs:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = request.top_logprobs
        try:
            response = self._llama.create_chat_completion(**kwargs)
        except ValueError as exc:  # prompt longer than the context window, bad grammar
            raise RequestRejected(f"local model refused the request: {exc}") from None
        return plain(response)

    def close(self) -> None:
        self._llama.close()


def plain(value: Any) -> Any:
    """The response with numpy scalars (llama-cpp-python's log-probabilities are
    ``numpy.float32``) turned into Python numbers, so it can be cached, stored and compared
    like any other."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if not isinstance(value, str | bytes | int | float | bool) and value is not None:
        item = getattr(value, "item", None)
        if callable(item):
            return item()
    return value
