"""Online evaluation: sampling, the cost ceiling, once per evaluator version, rolling runs,
and a watcher that stops anywhere going on where it stopped."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from pathlib import Path

import pytest

from assay.errors import ConfigError
from assay.run.evaluate import as_evaluator
from assay.run.sources.base import AttributeFilter
from assay.run.sources.received import StoreSource
from assay.run.sources.watch import SamplingRules, Watcher, draw
from assay.store import traces as trace_store
from assay.store.runs import RunStore
from assay.store.traces import ReceivedSpan, append_spans, decision_counts
from assay.suites.model import Suite
from assay.types.config import RunConfig
from assay.types.spans import Span

HOUR = 3600.0


def _traces(store: RunStore, count: int, *, start: float | None = None, error_at: int = -1,
            feedback_at: int = -1, tier: str = "free") -> list[str]:
    start = time.time() - 600 if start is None else start
    ids, spans = [], []
    for i in range(count):
        trace_id = secrets.token_hex(16)
        root = secrets.token_hex(8)
        ids.append(trace_id)
        spans.append(ReceivedSpan(trace_id, Span(
            name="agent", span_id=root, start_time=start + i, end_time=start + i + 1,
            status="error" if i == error_at else "ok",
            attributes={"input.value": f"question {i}", "output.value": f"answer {i} yes",
                        "user.tier": tier})))
        if i == feedback_at:
            spans.append(ReceivedSpan(trace_id, Span(
                name="user_feedback", span_id=secrets.token_hex(8), parent_id=root,
                attributes={"feedback.thumbs": "down"})))
    append_spans(store, spans)
    return ids


def _suite(name: str = "has_yes", text: str = "yes") -> Suite:
    return Suite(name="s", evaluators=[as_evaluator(
        {"type": "contains", "search_text": text, "name": name})])


def _watcher(store: RunStore, suite: Suite | None = None, **options: object) -> Watcher:
    rules = options.pop("rules", SamplingRules())
    return Watcher(StoreSource(store), suite or _suite(), store, name="prod",
                   rules=rules, settle_s=0, **options)  # type: ignore[arg-type]


def _tick(watcher: Watcher, now: float | None = None):  # type: ignore[no-untyped-def]
    return asyncio.run(watcher.tick(now))


def test_a_sample_is_judged_and_errors_and_feedback_always_are(tmp_path: Path) -> None:
    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    ids = _traces(store, 40, error_at=5, feedback_at=7)
    watcher = _watcher(store, rules=SamplingRules(rate=0.25))
    report = _tick(watcher)
    drawn = {t for t in ids if draw(watcher.key, t) < 0.25}
    expected = drawn | {ids[5], ids[7]}
    assert report.judged == len(expected) and report.sampled_out == 40 - len(expected)
    (run_id,) = report.run_ids
    judged = {r.case.metadata["trace"]["id"] for r in store.case_records(run_id)}
    assert judged == expected
    assert 0 < len(drawn) < 40


def test_filters_leave_other_traces_out(tmp_path: Path) -> None:
    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    paid = _traces(store, 3, tier="paid")
    _traces(store, 4, tier="free")
    report = _tick(_watcher(store, rules=SamplingRules(
        filters=(AttributeFilter("user.tier", "paid"),))))
    assert (report.judged, report.filtered_out) == (3, 4)
    assert {r.case_id for r in store.case_records(report.run_ids[0])} == set(paid)


def test_each_trace_is_judged_once_per_evaluator_version_into_the_period_run(
        store_url: str) -> None:
    store = RunStore(store_url)
    _traces(store, 5)
    now = time.time()
    watcher = _watcher(store)
    first = _tick(watcher, now)
    assert first.judged == 5
    assert _tick(watcher, now).judged == 0  # nothing new: nothing judged again
    _traces(store, 3)
    again = _tick(watcher, now + 1)
    assert again.judged == 3 and again.run_ids == first.run_ids  # the same period's run
    run = store.run_record(first.run_ids[0])
    assert run.summary is not None and run.summary.cases == 8
    later = _tick(watcher, now + HOUR)  # the next period starts its own run, of new traces
    assert later.judged == 0
    _traces(store, 2)
    later = _tick(watcher, now + HOUR)
    assert later.judged == 2 and later.run_ids != first.run_ids
    assert store.run_record(later.run_ids[0]).suite == run.suite  # one trend
    changed = _watcher(store, _suite(text="answer"))  # another version judges all, once
    assert changed.key != watcher.key
    assert _tick(changed, now + HOUR).judged == 10
    assert _tick(changed, now + HOUR).judged == 0
    assert decision_counts(store, watcher.key) == {"judged": 10}


def test_a_watcher_stopped_between_judging_and_recording_goes_on_without_repeats(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mock_model: str,
        mock_server) -> None:  # type: ignore[no-untyped-def]
    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    ids = _traces(store, 6)
    suite = Suite(name="s", evaluators=[as_evaluator(
        {"type": "llm_judge", "name": "judge", "prompt": "Is {{candidate_answer}} good?"})])
    config = RunConfig(judge_model=mock_model, cache="off")
    record = trace_store.record_decisions
    calls = {"n": 0}

    def dying(store_: RunStore, watcher: str, decisions: list,  # type: ignore[type-arg]
              now: float) -> None:
        if any(d[1] == "judged" for d in decisions):
            calls["n"] += 1
            if calls["n"] == 1:
                raise KeyboardInterrupt  # stopped once the run stored its cases
        record(store_, watcher, decisions, now)

    monkeypatch.setattr("assay.run.sources.watch.record_decisions", dying)
    watcher = _watcher(store, suite, config=config, batch=3)
    with pytest.raises(KeyboardInterrupt):
        _tick(watcher)
    assert mock_server.stats.requests == 3  # the first batch was judged
    report = _tick(_watcher(store, suite, config=config, batch=3))  # a new process
    assert report.judged == 6
    assert mock_server.stats.requests == 6  # no trace judged twice
    (run_id,) = report.run_ids
    assert sorted(r.case_id for r in store.case_records(run_id)) == sorted(ids)
    assert decision_counts(store, watcher.key) == {"judged": 6}


def test_no_batch_starts_past_the_cost_ceiling_and_the_rest_wait(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mock_model: str,
        mock_server) -> None:  # type: ignore[no-untyped-def]
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"judge-model": [1000.0, 1000.0]}))
    monkeypatch.setenv("ASSAY_PRICES", str(prices))
    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    _traces(store, 6)
    suite = Suite(name="s", evaluators=[as_evaluator(
        {"type": "llm_judge", "name": "judge", "prompt": "Is {{candidate_answer}} good?"})])
    config = RunConfig(judge_model=mock_model, cache="off")
    now = time.time()
    watcher = _watcher(store, suite, config=config, batch=2,
                       rules=SamplingRules(max_cost_per_hour=0.01))
    report = _tick(watcher, now)
    assert (report.judged, report.waiting) == (2, 4)
    assert report.cost > 0.01
    assert _tick(watcher, now).judged == 0  # still within the hour
    assert _tick(watcher, now + HOUR + 1).judged == 2  # the hour has passed: the next batch


def test_bad_rules_are_refused() -> None:
    with pytest.raises(ConfigError, match="sampling rate"):
        SamplingRules(rate=1.5)
    with pytest.raises(ConfigError, match="cost ceiling"):
        SamplingRules(max_cost_per_hour=-1)


def test_the_server_judges_the_traces_it_receives(tmp_path: Path, mock_model: str) -> None:
    import httpx
    import orjson

    from assay.server.settings import WatchSettings
    from tests.server_support import serve
    from tests.trace_support import agent_trace, export

    url = f"sqlite:///{tmp_path}/runs.db"
    spans = [s for i in range(2) for s in agent_trace(f"q{i}", f"a{i}")[1]]
    watch = WatchSettings(judges=["safety"], interval_s=0.2, settle_s=0)
    with serve(url, default_judge=mock_model, watch=watch) as served:
        answer = httpx.post(served.url + "/v1/traces", content=orjson.dumps(export(*spans)),
                            headers={"content-type": "application/json"})
        assert answer.status_code == 200
        store = RunStore(url)
        deadline = time.monotonic() + 60
        while True:
            runs = [r for r in store.run_records() if r.suite == "watch serve"]
            if runs and len(store.case_records(runs[0].id)) == 2:
                break
            assert time.monotonic() < deadline, "the server judged nothing"
            time.sleep(0.2)
    (record, _) = store.case_records(runs[0].id)
    assert [s.name for s in record.scores] == ["safety"]
