"""A re-run works offline: with the judge's server down or its key unset, answers the response
cache holds are replayed, and only calls it does not hold fail, each as its case's error.

A real mock server answers the first run and is then stopped (its port refuses connections,
as a laptop on a train would); the cache and the stores are real SQLite files.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.errors import ConfigError
from assay.llm import EngineConfig, JudgeEngine
from assay.llm.cache import cache_key
from assay.llm.types import NotCached
from assay.testing.mock_server import serve_in_thread
from assay.types.records import RunStatus

ROWS = [{"id": f"c{i}", "input": f"what colour is thing {i}",
         "expected_output": f"thing {i} is blue", "output": f"the thing {i} is blue"}
        for i in range(3)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(rows: list[dict[str, Any]], model: str, store: Path, **options: Any) -> Any:
    return assay.evaluate(rows, evaluators=["semantic_similarity"], judge_model=model,
                          store=store, **options)


def _cached_then_offline(tmp_path: Path) -> str:
    """A model whose answers to ``ROWS`` are cached by a run, its server then stopped."""
    port = _free_port()
    model = f"http://127.0.0.1:{port}/v1#judge"
    server = serve_in_thread(port=port)
    try:
        _run(ROWS, model, tmp_path / "runs.db")
    finally:
        server.stop()
    return model


def test_a_cached_rerun_needs_no_server_and_a_new_case_fails_alone_until_resumed(tmp_path):
    port = _free_port()
    model = f"http://127.0.0.1:{port}/v1#judge"
    store = tmp_path / "runs.db"
    server = serve_in_thread(port=port)
    try:
        first = _run(ROWS, model, store)
    finally:
        server.stop()
    assert first.summary.evaluator_errors == 0

    again = _run(ROWS, model, store)  # the server is gone: every answer is cached
    assert again.run.status is RunStatus.COMPLETED
    assert again.summary.evaluator_errors == 0
    assert [r.scores[0].value for r in again.records] == \
        [r.scores[0].value for r in first.records]
    assert any(n.startswith("offline: ") and n.endswith("all of them") for n in again.notes)

    more = [*ROWS, {"id": "new", "input": "what colour is the sky",
                    "expected_output": "blue", "output": "grey"}]
    partial = _run(more, model, store)
    errors = {r.case_id: r.scores[0].error for r in partial.records if r.scores[0].error}
    assert list(errors) == ["new"]
    assert errors["new"].code == "not_cached"
    assert "not in the response cache" in errors["new"].message
    assert sum(r.scores[0].value is not None for r in partial.records) == 3
    note = next(n for n in partial.notes if n.startswith("offline: "))
    assert "1 call not in it failed" in note and "--retry-errors" in note
    assert partial.run.summary is not None and note in partial.run.summary.notes  # stored

    server = serve_in_thread(port=port)  # back online: the resume computes the error again
    try:
        done = assay.resume(partial.run_id, data=more, store=store, retry_errors=True)
    finally:
        server.stop()
    assert done.summary.evaluator_errors == 0
    assert all(r.scores[0].value is not None for r in done.records)
    assert not any(n.startswith("offline: ") for n in done.notes)


def test_an_unreachable_model_with_nothing_cached_is_still_refused_before_any_call(tmp_path):
    model = f"http://127.0.0.1:{_free_port()}/v1#judge"
    with pytest.raises(ConfigError) as info:
        _run(ROWS, model, tmp_path / "runs.db")
    assert info.value.code == "unreachable_base_url"


def test_with_the_cache_off_or_refreshed_an_unreachable_model_is_refused(tmp_path):
    model = _cached_then_offline(tmp_path)
    for mode in ("off", "refresh"):
        with pytest.raises(ConfigError) as info:
            _run(ROWS, model, tmp_path / "runs.db", cache=mode)
        assert info.value.code == "unreachable_base_url"


async def test_a_missing_key_replays_cached_answers_and_fails_only_the_rest(
        tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    engine = JudgeEngine(EngineConfig(default_model="openai:gpt-4o-mini",
                                      cache_path=tmp_path / "cache.sqlite"))
    provider = engine.resolve()
    cached = {"messages": [{"role": "user", "content": "cached"}]}
    answer = {"choices": [{"message": {"role": "assistant", "content": "yes"},
                           "finish_reason": "stop"}], "usage": {}}
    assert engine.cache is not None
    engine.cache.put(cache_key(engine._identity(provider), cached),  # type: ignore[arg-type]
                     provider.spec.display, answer)
    await engine.preflight()
    assert "OPENAI_API_KEY" in engine.offline[provider.spec.display]
    hit = await engine.chat(cached)  # type: ignore[arg-type]
    assert hit.stats.cached and hit.response == answer
    with pytest.raises(NotCached, match=r"not in the response cache.*OPENAI_API_KEY"):
        await engine.chat({"messages": [{"role": "user", "content": "new"}]})
    assert engine.offline_misses == 1


async def test_a_batch_run_or_a_cluster_keeps_the_strict_check(tmp_path, monkeypatch):
    """A batch must reach its provider, and a cluster's workers check their own models."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    engine = JudgeEngine(EngineConfig(default_model="openai:gpt-4o-mini",
                                      cache_path=tmp_path / "cache.sqlite"))
    provider = engine.resolve()
    assert engine.cache is not None
    engine.cache.put("k", provider.spec.display, {"choices": []})
    with pytest.raises(ConfigError) as info:
        await engine.preflight(offline_ok=False)
    assert info.value.code == "missing_api_key" and not engine.offline


def test_an_offline_dry_run_says_how_many_calls_would_fail(tmp_path):
    model = _cached_then_offline(tmp_path)
    more = [*ROWS, {"id": "new", "input": "sky", "expected_output": "blue", "output": "grey"}]
    dry = _run(more, model, tmp_path / "runs.db", dry_run=True)
    note = next(n for n in dry.notes if n.startswith("offline: "))
    assert "1 call not in it would fail" in note
