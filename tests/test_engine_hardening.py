"""The judge engine against hostile servers and bad settings: bounded answers, validated
caching, independent samples, clear model-string and cache errors, malformed bodies."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from assay.errors import ConfigError
from assay.judges import EvalContext, SemanticSimilarity
from assay.llm import EngineConfig, JudgeEngine, parse_model, register_service
from assay.llm.models import base_url_for, is_demo_model, ollama_host_url
from assay.llm.structured import RAW_KEPT_CHARS, REASK_ECHO_CHARS
from assay.testing.mock_server import RunningServer
from assay.types.case import Case
from assay.types.execution import Execution
from tests.assay_process import run_assay
from tests.conftest import fast_retry


def _pair(output: str = "Paris is the capital") -> tuple[Case, Execution]:
    return Case(id="c", expected_output="Paris is the capital of France"), Execution(
        output=output)


async def _judge(engine: JudgeEngine, output: str = "Paris is the capital", sample: int = 0):
    case, execution = _pair(output)
    ctx = EvalContext(engine)
    if sample:
        ctx.sample = sample
    return await SemanticSimilarity().evaluate(case, execution, ctx)


def assay(cwd: Path, *args: str, env: dict[str, str] | None = None
          ) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "ASSAY_CACHE_DIR": str(cwd / "cache"), **(env or {})}
    full_env.pop("ASSAY_JUDGE_MODEL", None)
    return run_assay(args, cwd=cwd, env=full_env, timeout=120)


# -- response sizes -------------------------------------------------------------------------


async def test_a_30_mb_answer_fails_its_call_without_filling_memory(
        engine_factory, mock_server: RunningServer) -> None:
    mock_server.configure(faults={"huge": 1.0}, huge_bytes=30 * 1024 * 1024)
    engine = engine_factory(cache_mode="off")
    tracemalloc.start()
    try:
        score = await _judge(engine)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert score.error is not None and score.error.code == "response_too_large"
    assert "max_response_bytes" in score.error.message
    assert mock_server.stats.requests == 1, "not retried: the same request gets the same answer"
    assert peak < 10 * 1024 * 1024, f"peak {peak:,} bytes"
    small = engine_factory(cache_mode="off", max_response_bytes=4096)
    mock_server.configure(faults={"huge": 1.0}, huge_bytes=8192)
    assert (await _judge(small)).error.code == "response_too_large"  # type: ignore[union-attr]


async def test_an_in_process_service_is_bounded_too(engine_factory) -> None:
    async def flood(request: dict[str, Any]) -> dict[str, Any]:
        return {"choices": [{"message": {"role": "assistant", "content": "x" * 5_000_000}}]}

    model = register_service("flood", flood)
    engine = engine_factory(cache_mode="off")
    case, execution = _pair()
    score = await SemanticSimilarity(model=model).evaluate(case, execution, EvalContext(engine))
    assert score.error is not None and score.error.code == "response_too_large"


async def test_reasks_echo_a_bounded_answer_and_errors_keep_a_bounded_raw(engine_factory
                                                                          ) -> None:
    seen: list[dict[str, Any]] = []

    async def chatty(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return {"choices": [{"message": {"role": "assistant", "content": "blah " * 200_000}}]}

    model = register_service("chatty", chatty)
    engine = engine_factory(cache_mode="off", reasks=2)
    case, execution = _pair()
    score = await SemanticSimilarity(model=model).evaluate(case, execution, EvalContext(engine))
    assert score.error is not None and score.error.code == "judge_output_invalid"
    assert len(seen) == 3
    for request in seen[1:]:
        echoed = [m for m in request["messages"] if m["role"] == "assistant"]
        assert echoed and all(len(m["content"]) < REASK_ECHO_CHARS + 100 for m in echoed)
        assert "more characters not shown" in echoed[-1]["content"]
    raw = (score.details or {})["raw_output"]
    assert len(raw) < RAW_KEPT_CHARS + 100 and "more characters not shown" in raw


async def test_a_slow_drip_body_ends_at_the_call_timeout(engine_factory,
                                                         mock_server: RunningServer) -> None:
    mock_server.configure(faults={"drip": 1.0}, drip_interval_s=0.05)
    engine = engine_factory(cache_mode="off", retry=fast_retry(call_timeout_s=0.4,
                                                               max_attempts=2))
    started = time.monotonic()
    score = await _judge(engine)
    assert time.monotonic() - started < 5
    assert score.error is not None and score.error.code == "retries_exhausted"
    assert "within 0.4s" in score.error.message


# -- cache only answers that validated --------------------------------------------------------


async def test_an_invalid_answer_is_not_cached_so_a_retry_calls_again(
        engine_factory, mock_server: RunningServer) -> None:
    mock_server.configure(faults={"prose": 1.0})
    broken = await _judge(engine_factory(reasks=1))
    assert broken.error is not None and broken.error.code == "judge_output_invalid"
    assert mock_server.stats.requests == 2
    mock_server.configure(faults={})  # the judge is fixed
    fixed = await _judge(engine_factory(reasks=1))  # a new engine on the same cache file
    assert fixed.ok and fixed.usage.calls == 1 and fixed.usage.cached_calls == 0
    assert mock_server.stats.requests == 1
    again = await _judge(engine_factory(reasks=1))
    assert again.ok and again.usage.cached_calls == 1 and mock_server.stats.requests == 1


async def test_a_cached_answer_that_does_not_validate_is_dropped_and_asked_again(
        engine_factory, mock_server: RunningServer, tmp_path: Path) -> None:
    seen = await _judge(engine_factory())
    assert seen.ok and mock_server.stats.requests == 1
    with sqlite3.connect(tmp_path / "cache.sqlite") as db:  # an answer cached by an old version
        db.execute("UPDATE responses SET response = ?", (
            b'{"choices": [{"message": {"role": "assistant", "content": "prose"}}]}',))
    again = await _judge(engine_factory(reasks=0))  # no re-ask can hide a replayed answer
    assert again.ok and again.value == seen.value
    assert again.usage.calls == 1 and mock_server.stats.requests == 2
    third = await _judge(engine_factory(reasks=0))  # the new answer was cached
    assert third.ok and third.usage.cached_calls == 1 and mock_server.stats.requests == 2


async def test_retry_errors_after_invalid_judge_output_calls_the_judge_again(
        tmp_path: Path, mock_server: RunningServer) -> None:
    """``assay run`` then ``--resume --retry-errors`` once the judge is fixed."""
    (tmp_path / "EVAL.yaml").write_text(
        "execution:\n  evaluators: [{name: similar, type: semantic_similarity}]\n"
        "evalcases:\n  - {id: a, input: q, expected_output: Paris, metadata: {output: Paris}}\n")
    mock_server.configure(faults={"prose": 1.0})
    model = f"{mock_server.url}#judge"
    first = assay(tmp_path, "run", "EVAL.yaml", "--judge-model", model, "--store",
                  "sqlite:///runs.db")
    assert first.returncode == 1 and "1 evaluator score: 0 values, 1 error" in first.stdout, first.stdout
    run_id = next(x for x in first.stdout.splitlines() if x.startswith("run ")).split()[1]
    mock_server.configure(faults={})
    second = assay(tmp_path, "run", "--resume", run_id, "--retry-errors", "--store",
                   "sqlite:///runs.db")
    assert second.returncode == 0, second.stdout + second.stderr
    assert mock_server.stats.requests == 1
    assert "judge calls 1" in second.stdout


# -- repeats are independent samples ------------------------------------------------------------


async def test_samples_are_separate_calls_and_each_is_cached(engine_factory,
                                                             mock_server: RunningServer) -> None:
    engine = engine_factory()
    first = await _judge(engine, sample=0)
    second = await _judge(engine, sample=1)
    assert first.usage.calls == 1 and second.usage.calls == 1
    assert mock_server.stats.requests == 2
    again = await _judge(engine, sample=1)
    assert again.usage.cached_calls == 1 and mock_server.stats.requests == 2
    request = {"model": "judge-model", "messages": [{"role": "user", "content": "hi"}]}
    await engine.chat(request)  # type: ignore[arg-type]
    await engine.chat(request, sample=3)  # type: ignore[arg-type]
    await engine.chat(request, sample=3)  # type: ignore[arg-type]
    assert mock_server.stats.requests == 4


def test_judge_identities_keep_the_request_keys_calibrations_were_stored_with() -> None:
    from assay.llm.cache import request_key

    request = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    assert request_key("p:m", request, 0) == request_key("p:m", request)  # type: ignore[arg-type]
    assert request_key("p:m", request, 1) != request_key("p:m", request)  # type: ignore[arg-type]
    # The key this request has had since calibrations were first stored: they stay current.
    assert request_key("p:m", request) == (  # type: ignore[arg-type]
        "b65dd8af3bab2a8d2ccffb9e974cf1636cf80db856078b040223a8e126780b85")


# -- model strings -------------------------------------------------------------------------------


@pytest.mark.parametrize("text, needle", [
    ("http://127.0.0.1:99999/v1#m", "Port out of range"),
    ("http://[::1/v1#m", "Invalid IPv6 URL"),
    ("http://127.0.0.1:abc/v1#m", "Port could not be cast"),
    ("http://:8000/v1#m", "names no host"),
    ("http://127.0.0.1:8000/v1#", "#MODEL"),
])
def test_bad_base_urls_are_config_errors(text: str, needle: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_model(text)
    assert needle in caught.value.message and "Accepted:" in caught.value.message


def test_bad_base_url_on_the_command_line_is_one_clear_line(tmp_path: Path) -> None:
    for model in ("http://127.0.0.1:99999/v1#m", "http://[::1/v1#m", "http://h:port/v1#m"):
        result = assay(tmp_path, "judge", "-e", "a", "-a", "b", "-m", model)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr and "base URL is not valid" in result.stderr


async def test_mlflow_spelling_sends_the_bare_model(engine_factory, mock_server: RunningServer,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-value")
    spec = parse_model("openai:/gpt-4o-mini")
    assert (spec.model, spec.name) == ("gpt-4o-mini", "openai:gpt-4o-mini")
    assert parse_model("local:/models/judge.gguf").model == "/models/judge.gguf"
    score = await _judge(engine_factory(default_model="openai:/gpt-4o-mini"))
    assert score.ok and score.judge_model == "openai:gpt-4o-mini"
    assert dict(mock_server.stats.models) == {"gpt-4o-mini": 1}


async def test_ollama_host_is_honoured(engine_factory, mock_server: RunningServer,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
    monkeypatch.setenv("OLLAMA_HOST", f"{mock_server.host}:{mock_server.port}")
    score = await _judge(engine_factory(default_model="ollama:llama3.2"))
    assert score.ok and dict(mock_server.stats.models) == {"llama3.2": 1}
    assert ollama_host_url("0.0.0.0") == "http://127.0.0.1:11434/v1"
    assert ollama_host_url("0.0.0.0:9999") == "http://127.0.0.1:9999/v1"
    assert ollama_host_url("https://ollama.example.com") == "https://ollama.example.com:443/v1"
    assert ollama_host_url("http://[::1]:8080/") == "http://[::1]:8080/v1"
    assert base_url_for("ollama", {"OLLAMA_BASE_URL": "http://x:1/v1", "OLLAMA_HOST": "y"}) \
        == "http://x:1/v1"
    assert base_url_for("ollama", {}) == "http://127.0.0.1:11434/v1"


def test_an_empty_judge_model_is_an_error_not_the_default(tmp_path: Path) -> None:
    for empty in ("", "   "):
        with pytest.raises(ConfigError, match="empty"):
            parse_model(empty)
        with pytest.raises(ConfigError, match="judge model is empty"):
            EngineConfig(default_model=empty)
        with pytest.raises(ConfigError, match="judge model is empty"):
            EngineConfig().default_model = empty
    result = assay(tmp_path, "judge", "-e", "a", "-a", "b", "-m", "")
    assert result.returncode == 2 and "judge model is empty" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_demo_model_is_named_plainly() -> None:
    assert is_demo_model("local:gemma-3-270m") and is_demo_model("local:default")
    assert not is_demo_model("local:/models/big.gguf") and not is_demo_model("openai:gpt-4o")
    assert not is_demo_model("") and not is_demo_model("nonsense")


@pytest.mark.slow
def test_assay_judge_on_the_demo_model_says_so_once(tmp_path: Path) -> None:
    """The default judge is the embedded model, which this test runs (hence slow)."""
    result = assay(tmp_path, "judge", "-e", "a", "-a", "b")  # the default judge
    notes = [line for line in result.stderr.splitlines() if "not meaningful" in line]
    assert len(notes) == 1 and "local:gemma-3-270m" in notes[0]
    deterministic = assay(tmp_path, "judge", "-e", "a", "-a", "a", "-t", "exact_match")
    assert deterministic.returncode == 0 and "not meaningful" not in deterministic.stderr


# -- malformed bodies ------------------------------------------------------------------------------


async def test_a_service_that_always_answers_malformed_is_not_retried_as_transient(
        engine_factory, mock_server: RunningServer) -> None:
    for fault in ("invalid_json", "empty_choices"):
        mock_server.configure(faults={fault: 1.0})
        engine = engine_factory(cache_mode="off", retry=fast_retry(max_attempts=8))
        score = await _judge(engine)
        assert score.error is not None and score.error.code == "retries_exhausted"
        assert "malformed body 4 times" in score.error.message
        assert mock_server.stats.requests == 4, fault
        strict = engine_factory(cache_mode="off", retry=fast_retry(max_bad_responses=2))
        assert "malformed body 2 times" in (await _judge(strict)).error.message  # type: ignore[union-attr]
        assert mock_server.stats.requests == 6, fault


# -- a broken response cache -----------------------------------------------------------------------


async def test_a_cache_that_is_not_sqlite_is_reported_before_any_call(
        engine_factory, mock_server: RunningServer, tmp_path: Path) -> None:
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"this is not a database" * 100)
    engine = engine_factory(cache_path=broken)
    with pytest.raises(ConfigError) as caught:
        await engine.preflight()
    message = caught.value.message
    assert str(broken) in message and "--cache off" in message and "ASSAY_CACHE_DIR" in message
    assert mock_server.stats.requests == 0


async def test_a_cache_that_cannot_be_created_is_reported(engine_factory,
                                                          tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    engine = engine_factory(cache_path=tmp_path / "a-file" / "cache.sqlite")
    with pytest.raises(ConfigError, match="cannot be used"):
        await engine.preflight()


def test_many_connections_opening_a_new_cache_at_once_all_can_use_it(tmp_path: Path) -> None:
    """pytest workers (or two runs started together) share one new cache. Switching it to WAL
    needs the file to itself, and SQLite says "locked" at once rather than wait, which
    stopped a worker with "the response cache cannot be used" (about one opener in forty
    here before the switch was retried)."""
    import threading

    from assay.llm.cache import ResponseCache

    failures: list[str] = []
    for round_ in range(30):
        path = tmp_path / f"cache-{round_}" / "responses.sqlite"
        start = threading.Barrier(6)

        def open_and_write(path: Path = path, start: threading.Barrier = start) -> None:
            cache = ResponseCache(path)  # one connection each, as one per process
            start.wait()
            try:
                cache.check()
                cache.put(f"key-{threading.get_ident()}", "model", {"ok": True})
            except ConfigError as exc:
                failures.append(exc.message)
            finally:
                cache.close()

        openers = [threading.Thread(target=open_and_write) for _ in range(6)]
        for opener in openers:
            opener.start()
        for opener in openers:
            opener.join()
        if failures:
            break
        cache = ResponseCache(path)
        assert cache.count() == 6  # every opener's answer was kept
        cache.close()
    assert failures == []


def test_a_broken_cache_stops_assay_judge_and_run_with_one_line(
        tmp_path: Path, mock_server: RunningServer) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "responses.sqlite").write_bytes(b"garbage" * 1000)
    model = f"{mock_server.url}#judge"
    judged = assay(tmp_path, "judge", "-e", "a", "-a", "b", "-m", model)
    assert judged.returncode == 2 and "responses.sqlite" in judged.stderr
    assert "--cache off" in judged.stderr and "Traceback" not in judged.stderr
    (tmp_path / "EVAL.yaml").write_text(
        "execution:\n  evaluators: [{name: similar, type: semantic_similarity}]\n"
        "evalcases:\n  - {id: a, input: q, expected_output: x, metadata: {output: x}}\n")
    ran = assay(tmp_path, "run", "EVAL.yaml", "--judge-model", model, "--store",
                "sqlite:///runs.db")
    assert ran.returncode == 2 and "responses.sqlite" in ran.stderr
    assert "evaluator_failed" not in ran.stdout + ran.stderr
    assert mock_server.stats.requests == 0
    off = assay(tmp_path, "judge", "-e", "a", "-a", "b", "-m", model, "--cache", "off")
    assert off.returncode in (0, 1), off.stderr
