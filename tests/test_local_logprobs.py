"""G-Eval weighting on the embedded GGUF model, on each backend installed: llama.cpp returns
the alternatives at the score's token (xllamacpp always; llama-cpp-python when loaded with
every token's logits, ``ASSAY_LOCAL_LOGPROBS=1``) and a ``rating`` judge asking for
``logprobs`` gets a probability-weighted rating."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from assay.judges import EvalContext, build
from assay.llm import EngineConfig, JudgeEngine, RetryPolicy
from assay.llm.providers import local, local_backends
from assay.types.case import Case
from assay.types.execution import Execution
from tests.conftest import local_model_available

needs_model = pytest.mark.skipif(not local_model_available(),
                                 reason="needs the 'local' extra (scripts/setup.sh installs it)")


def test_llama_cpp_numpy_logprobs_become_plain_numbers():
    numpy = pytest.importorskip("numpy")
    top = [{"token": " 4", "logprob": numpy.float32(-0.25), "bytes": None}]
    response = {"choices": [{"logprobs": {"content": [
        {"token": " 4", "logprob": numpy.float32(-0.25), "top_logprobs": top}]}}],
        "usage": {"prompt_tokens": numpy.int64(3)}, "model": "m"}
    plain = local_backends.plain(response)
    token = plain["choices"][0]["logprobs"]["content"][0]
    assert type(token["logprob"]) is float and token["logprob"] == -0.25
    assert type(token["top_logprobs"][0]["logprob"]) is float
    assert type(plain["usage"]["prompt_tokens"]) is int and plain["model"] == "m"
    assert token["top_logprobs"][0]["bytes"] is None
    json.dumps(plain)  # cacheable and storable


@pytest.fixture
def local_with_logits(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A fresh model table, so the model is loaded here with logits whatever ran before."""
    models: dict[str, Any] = {}
    monkeypatch.setenv("ASSAY_LOCAL_LOGPROBS", "1")
    monkeypatch.setenv("ASSAY_LOCAL_N_CTX", "1024")  # logits for every token: ~1 GB
    monkeypatch.setattr(local, "_MODELS", models)
    yield models
    for model in models.values():
        model.close()


@pytest.mark.slow
@needs_model
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("backend", local_backends.installed())
async def test_a_rating_on_the_embedded_model_is_weighted_by_its_logprobs(tmp_path, monkeypatch,
                                                                          local_with_logits,
                                                                          backend):
    monkeypatch.setenv(local_backends.BACKEND_ENV, backend)
    # On a shared 2-core machine one call with every token's logits can take minutes: a call
    # cut off by a timeout would still hold the model, so the bounds are generous.
    patient = RetryPolicy(max_attempts=1, call_timeout_s=1200, total_timeout_s=1500)
    engine = JudgeEngine(EngineConfig(default_model="local:gemma-3-270m", retry=patient,
                                      cache_path=tmp_path / "cache.sqlite"))
    await engine.preflight()
    judge = build({"type": "rating", "logprobs": True,
                   "criteria": "Is the answer correct and complete?"})
    case = Case(id="fr", input="What is the capital of France?",
                expected_output="Paris")
    score = await judge.evaluate(case, Execution(output="The capital of France is Paris."),
                                 EvalContext(engine))
    await engine.aclose()
    assert score.error is None, score.error
    details = score.details or {}
    assert details.get("weighted") is True, details
    distribution = details["distribution"]
    assert distribution and set(distribution) <= {"1", "2", "3", "4", "5"}, distribution
    assert sum(distribution.values()) == pytest.approx(1.0)
    assert score.raw == pytest.approx(sum(int(v) * p for v, p in distribution.items()))
    assert 1.0 <= score.raw <= 5.0 and score.value == pytest.approx((score.raw - 1) / 4)
    assert details["answered"] in range(1, 6)
    assert len(local_with_logits) == 1  # the model this process loaded with logits
