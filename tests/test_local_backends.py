"""The embedded model on each llama.cpp backend installed here (xllamacpp, llama-cpp-python):
the same provider behaviour on both, with the real packaged model, and the same Gemma prompt."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from assay.errors import ConfigError
from assay.llm.models import parse_model
from assay.llm.providers import local, local_backends
from assay.llm.providers.local import LocalProvider
from assay.llm.types import ChatRequest, RequestRejected
from tests.ci_support import missing
from tests.conftest import local_model_available

INSTALLED = local_backends.installed() if local_model_available() else []
on_each_backend = pytest.mark.parametrize("backend", INSTALLED)
VERDICT = {"type": "object", "properties": {
    "reason": {"type": "string", "maxLength": 200},
    "verdict": {"type": "string", "enum": ["pass", "fail"]},
    "score": {"type": "number", "minimum": 0, "maximum": 100}},
    "required": ["reason", "verdict", "score"]}
JUDGE_SYSTEM = ("You are an expert evaluator. Respond with a JSON object: \"reason\", one "
                "sentence, then \"verdict\" (pass or fail), then \"score\" from 0 to 100.")
QUESTIONS = [("What is the capital of France?", "The capital of France is Paris."),
             ("What is the capital of Japan?", "Tokyo is the capital of Japan."),
             ("Capital of Australia?", "Sydney is the capital of Australia."),
             ("What is 2 + 2?", "2 + 2 = 5.")]


def judge_request(question: str, answer: str, **extra: Any) -> ChatRequest:
    request: ChatRequest = {
        "model": "gemma-3-270m", "temperature": 0.0, "max_tokens": 160, "seed": 0,
        "messages": [{"role": "system", "content": JUDGE_SYSTEM},
                     {"role": "user", "content": f"Question: {question}\nAnswer: {answer}\n"
                                                 "Is the answer correct?"}],
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": "verdict", "schema": VERDICT}}}
    request.update(extra)  # type: ignore[typeddict-item]
    return request


def provider(monkeypatch: pytest.MonkeyPatch, backend: str,
             name: str = "local:gemma-3-270m") -> LocalProvider:
    monkeypatch.setenv(local_backends.BACKEND_ENV, backend)
    return LocalProvider(parse_model(name))


def answer_of(response: dict[str, Any]) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(response["choices"][0]["message"]["content"])
    return parsed


def listening_tcp_sockets_of_this_process() -> set[str]:
    """Inodes of the TCP sockets this process listens on (Linux /proc)."""
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            mine.add(target[8:-1])
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                listening.add(fields[9])
    return mine & listening


def test_an_unknown_backend_is_refused_and_an_absent_one_is_named(monkeypatch):
    monkeypatch.setenv(local_backends.BACKEND_ENV, "llamafile")
    with pytest.raises(ConfigError, match="expected one of xllamacpp, llama-cpp-python"):
        local_backends.chosen()
    absent = [name for name in local_backends.BACKENDS if name not in local_backends.installed()]
    for name in absent:
        monkeypatch.setenv(local_backends.BACKEND_ENV, name)
        with pytest.raises(ConfigError, match=f"{name} is not installed"):
            local_backends.chosen()
    monkeypatch.delenv(local_backends.BACKEND_ENV)
    if local_backends.installed():
        assert local_backends.chosen() == local_backends.installed()[0]


def test_the_grammar_allows_no_unnamed_property_and_one_space_between_tokens():
    bounded = local._bounded(VERDICT)
    assert bounded["additionalProperties"] is False
    assert bounded["properties"]["reason"]["maxLength"] == 200  # a bound given is kept
    assert local._bounded({"type": "string"})["maxLength"] == local.MAX_STRING_CHARS
    assert "maxLength" not in bounded["properties"]["verdict"]  # an enum is bounded already
    guided = local_backends._llguidance_schema(bounded)
    assert guided["x-guidance"] == {"whitespace_pattern": " ?", "lenient": True}
    assert guided["properties"]["score"]["multipleOf"] == local_backends.NUMBER_STEP
    assert "multipleOf" not in guided["properties"]["reason"]
    assert local._merge_system([{"role": "system", "content": " Be brief. \n"},
                                {"role": "user", "content": "Hi\n"}]) == [
        {"role": "user", "content": "Be brief.\n\nHi"}]


@pytest.mark.slow
@on_each_backend
async def test_a_judge_answer_follows_its_schema_with_token_counts(monkeypatch, backend):
    response = await provider(monkeypatch, backend).complete(judge_request(*QUESTIONS[0]), 300)
    verdict = answer_of(response)
    assert list(verdict) == ["reason", "verdict", "score"]  # no property the schema lacks
    assert verdict["verdict"] in ("pass", "fail") and 0 <= verdict["score"] <= 100
    usage = response["usage"]
    assert usage["prompt_tokens"] > 40 and 0 < usage["completion_tokens"] <= 160
    assert response["model"] == "local:gemma-3-270m"
    json.dumps(response)  # plain data: cacheable and storable


@pytest.mark.slow
@on_each_backend
async def test_a_prompt_longer_than_the_context_is_refused(monkeypatch, backend):
    request = judge_request("word " * 9000, "yes")  # the default context is 8,192 tokens
    with pytest.raises(RequestRejected, match="local model refused the request"):
        await provider(monkeypatch, backend).complete(request, 300)


@pytest.mark.slow
@on_each_backend
async def test_concurrent_calls_from_two_providers_share_one_loaded_model(monkeypatch, backend):
    first = provider(monkeypatch, backend)
    second = provider(monkeypatch, backend, "local:default")  # the same packaged model
    await asyncio.gather(first.preflight(), second.preflight())
    responses = await asyncio.gather(*(
        chosen.complete(judge_request(*question), 300)
        for chosen, question in zip([first, second, first, second], QUESTIONS, strict=True)))
    assert all(answer_of(r)["verdict"] in ("pass", "fail") for r in responses)
    loaded = [key for key in local._MODELS if key[0] == backend]
    assert len(loaded) == 1, loaded


@pytest.mark.slow
@on_each_backend
async def test_a_call_past_its_timeout_is_an_error_and_the_model_serves_the_next(monkeypatch,
                                                                                backend):
    chosen = provider(monkeypatch, backend)
    await chosen.preflight()
    with pytest.raises(TimeoutError):
        await chosen.complete(judge_request(*QUESTIONS[1], max_tokens=300), 0.05)
    response = await chosen.complete(judge_request(*QUESTIONS[1]), 300)
    assert answer_of(response)["verdict"] in ("pass", "fail")


@pytest.mark.slow
@on_each_backend
def test_loading_a_model_keeps_the_process_signal_handlers(backend):
    caught: list[int] = []
    previous = {sig: signal.signal(sig, lambda number, frame: caught.append(number))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    loaded: list[local_backends.LocalBackend] = []
    try:
        options = local_backends.LoadOptions(
            path=local.resolve_model_path("gemma-3-270m"), chat_format="gemma", n_ctx=512,
            n_threads=1)
        worker = threading.Thread(target=lambda: loaded.append(
            local_backends.load(backend, options)))
        worker.start()  # on a worker thread, as the provider loads it
        worker.join()
        assert loaded, "the model did not load"
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100):  # Python runs its handlers between bytecodes of this thread
            if len(caught) == 2:
                break
            threading.Event().wait(0.01)
        assert sorted(caught) == sorted([signal.SIGINT, signal.SIGTERM])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for model in loaded:
            model.close()


@pytest.mark.slow
@pytest.mark.skipif(local_backends.XLLAMACPP not in INSTALLED, reason="needs xllamacpp")
async def test_the_prebuilt_backend_listens_on_no_tcp_port(monkeypatch):
    before = listening_tcp_sockets_of_this_process()
    options = local_backends.LoadOptions(path=local.resolve_model_path("gemma-3-270m"),
                                         chat_format="gemma", n_ctx=512, n_threads=1)
    model = await asyncio.to_thread(local_backends.load, local_backends.XLLAMACPP, options)
    try:
        assert listening_tcp_sockets_of_this_process() - before == set()
    finally:
        model.close()


@pytest.mark.slow
@pytest.mark.skipif(local_backends.XLLAMACPP not in INSTALLED, reason="needs xllamacpp")
async def test_a_schema_llama_cpp_cannot_compile_is_an_error_not_an_unconstrained_answer(
        monkeypatch):
    # LLGuidance compiles no multipleOf of a fraction; llama.cpp then drops the constraint
    # without an error and the model answers free text.
    schema = {"type": "object", "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 100, "multipleOf": 1e-16}},
        "required": ["score"]}
    request = judge_request(*QUESTIONS[0])
    request["response_format"] = {"type": "json_schema",
                                  "json_schema": {"name": "s", "schema": schema}}
    with pytest.raises(RequestRejected, match="not constrained"):
        await provider(monkeypatch, local_backends.XLLAMACPP).complete(request, 300)


@pytest.mark.slow
async def test_both_backends_build_the_same_gemma_prompt(monkeypatch):
    if len(INSTALLED) < 2:
        missing("backend", "needs both xllamacpp and llama-cpp-python: "
                "bash scripts/setup.sh --both-backends installs them")
    counts: dict[str, list[int]] = {}
    for backend in INSTALLED:
        chosen = provider(monkeypatch, backend)
        counts[backend] = []
        for question in QUESTIONS:
            response = await chosen.complete(judge_request(*question, max_tokens=60), 300)
            counts[backend].append(response["usage"]["prompt_tokens"])
    first, second = counts.values()
    assert first == second, counts  # the same turns, the same BOS, the same tokens


def test_the_cache_keeps_each_backends_answers_apart(monkeypatch):
    from assay.llm.cache import cache_key
    from assay.llm.models import LOCAL_DEFAULT_MODEL, parse_model

    monkeypatch.setattr(local_backends, "installed", lambda: list(local_backends.BACKENDS))
    provider = local.LocalProvider(parse_model(f"local:{LOCAL_DEFAULT_MODEL}"))
    request = {"messages": [{"role": "user", "content": "Is Paris in France?"}]}
    keys = set()
    for name in local_backends.BACKENDS:
        monkeypatch.setenv(local_backends.BACKEND_ENV, name)
        assert provider.cache_identity()["backend"] == name
        keys.add(cache_key(provider.cache_identity(), request))
    assert len(keys) == len(local_backends.BACKENDS)
