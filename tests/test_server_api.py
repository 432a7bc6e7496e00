"""The REST API through an HTTP client against a running server over a real store (SQLite,
and PostgreSQL in the marked pass): every endpoint, pagination, filters, 400/401/404/409/413/
503 answers as JSON, compare and baselines with Connexity's responses."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from assay.store.runs import RunStore
from assay.testing.runs import HOSTILE, store_case, write_run
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.records import CaseRecord, RunStatus, Verdict
from assay.types.score import Score
from tests.assay_process import run_assay
from tests.postgres_support import fresh_database, postgres_url
from tests.server_support import echo_suite, events, serve

pytest.importorskip("fastapi")

ODD_ID = "a/b ../c %_?#&<x>"
HUGE = "x" * 3_000_000


def _populate(url: str) -> dict[str, str]:
    store = RunStore(url)
    now = time.time()
    ids = {
        "base": write_run(store, 60, seed=1, quality=0.8, created_at=now - 4 * 86400),
        "cand": write_run(store, 60, seed=2, quality=0.6, created_at=now - 3 * 86400,
                          judge_model="openai:gpt-4o", hostile_at=[4]),
        "interrupted": write_run(store, 10, seed=3, status=RunStatus.INTERRUPTED,
                                 created_at=now - 2 * 86400),
        "other": write_run(store, 5, suite="chat", seed=4, target="chat-agent",
                           created_at=now - 86400),
    }
    odd = store.create_run("odd", {"suite_name": "odd"}, run_id="run-odd")
    for i, (case_id, output) in enumerate([(ODD_ID, "odd"), ("huge", HUGE),
                                           ("100%_done", "percent")]):
        record = CaseRecord(run_id=odd, case_id=case_id, case=Case(id=case_id, input="q"),
                            execution=Execution(input="q", output=output),
                            scores=[Score(name="exact", value=1.0, passed=True)],
                            score=1.0 - i * 0.1, verdict=Verdict.PASS)
        store.record_execution(odd, case_id, 0, record.execution)
        store.record_score(odd, case_id, 0, record.scores[0])
        store.record_case(record)
    store.flush()
    store.set_status(odd, "completed", {"cases": 3})
    ids["odd"] = odd
    store.close()
    return ids


@pytest.fixture(scope="module",
                params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def stored(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) \
        -> Iterator[tuple[str, dict[str, str]]]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('api')}/runs.db"
        yield url, _populate(url)
        return
    with fresh_database(postgres_url()) as url:
        yield url, _populate(url)


@pytest.fixture(scope="module")
def api(stored: tuple[str, dict[str, str]]) -> Iterator[httpx.Client]:
    with serve(stored[0]) as served, served.client() as client:
        yield client


@pytest.fixture(scope="module")
def ids(stored: tuple[str, dict[str, str]]) -> dict[str, str]:
    return stored[1]


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"detail", "code"} and body["detail"], body
    assert "Traceback" not in response.text and 'File "' not in response.text
    return body


# -- runs ------------------------------------------------------------------------------------


def test_runs_are_listed_newest_first_with_pass_rates_and_filters(api, ids):
    page = api.get("/runs").json()
    assert page["total"] == 5
    assert [r["id"] for r in page["items"]][:4] == ["run-odd", ids["other"], ids["interrupted"],
                                                     ids["cand"]]
    base = next(r for r in page["items"] if r["id"] == ids["base"])
    assert base["target"] == "calculator-agent" and base["summary"]["cases"] == 60
    assert base["pass_rate"] == base["summary"]["verdicts"].get("pass", 0) / 60
    assert "config" not in base
    assert api.get("/runs", params={"suite": "chat"}).json()["total"] == 1
    assert api.get("/runs", params={"target": "chat-agent"}).json()["items"][0]["id"] == \
        ids["other"]
    assert api.get("/runs", params={"status": "interrupted"}).json()["total"] == 1
    since = time.time() - 2.5 * 86400
    recent = {r["id"] for r in api.get("/runs", params={"since": since}).json()["items"]}
    assert recent == {ids["interrupted"], ids["other"], "run-odd"}
    moment = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3.5 * 86400))
    older = api.get("/runs", params={"until": moment}).json()["items"]
    assert [r["id"] for r in older] == [ids["base"]]


def test_runs_paginate_without_gaps_or_repeats(api):
    seen: list[str] = []
    for offset in range(0, 6, 2):
        page = api.get("/runs", params={"limit": 2, "offset": offset}).json()
        assert page["limit"] == 2 and page["offset"] == offset and page["total"] == 5
        seen += [r["id"] for r in page["items"]]
    assert len(seen) == 5 == len(set(seen))


@pytest.mark.parametrize(("params", "named"), [
    ({"limit": "abc"}, "limit"), ({"limit": 0}, "limit"), ({"limit": 100000}, "limit"),
    ({"offset": -1}, "offset"), ({"status": "exploded"}, "status"),
    ({"since": "last tuesday"}, "since"), ({"until": "2026-13-45"}, "until"),
    ({"suite": "s" * 600}, "suite"),
])
def test_malformed_run_list_parameters_are_400_naming_the_parameter(api, params, named):
    body = _error(api.get("/runs", params=params), 400)
    assert named in body["detail"]


def test_a_run_has_its_summary_gates_and_config_snapshot(api, ids):
    run = api.get(f"/runs/{ids['base']}").json()
    assert run["status"] == "completed" and run["suite"] == "math"
    assert run["summary"]["gate_failures"] and run["summary"]["passed"] is False
    assert run["config"]["judge_models"] == ["openai:gpt-4o-mini"]
    assert run["running_here"] is False


def test_unknown_runs_and_cases_are_404_json(api, ids):
    assert "Run not found" in _error(api.get("/runs/nope"), 404)["detail"]
    _error(api.get("/runs/nope/cases"), 404)
    _error(api.get("/runs/nope/histograms"), 404)
    _error(api.delete("/runs/nope"), 404)
    _error(api.patch("/runs/nope", json={"is_baseline": True}), 404)
    body = _error(api.get(f"/runs/{ids['base']}/case", params={"case_id": "missing"}), 404)
    assert "missing" in body["detail"]
    _error(api.get("/no/such/path"), 404)
    # a run id is matched exactly: a prefix names no run here
    _error(api.get(f"/runs/{ids['base'][:8]}"), 404)


# -- cases -----------------------------------------------------------------------------------


def test_cases_paginate_problems_first_and_cover_every_case_once(api, ids):
    seen, verdicts = [], []
    for offset in range(0, 60, 25):
        page = api.get(f"/runs/{ids['base']}/cases", params={"limit": 25, "offset": offset})
        body = page.json()
        assert body["total"] == 60
        seen += [(c["case_id"], c["repeat"]) for c in body["items"]]
        verdicts += [c["verdict"] for c in body["items"]]
    assert len(seen) == 60 == len(set(seen))
    order = ["error", "fail", "borderline", "skipped", "pass"]
    assert [order.index(v) for v in verdicts] == sorted(order.index(v) for v in verdicts)


def test_cases_filter_by_verdict_evaluator_and_text(api, ids):
    run = ids["base"]
    failing = api.get(f"/runs/{run}/cases", params={"verdict": "fail,error"}).json()
    assert failing["total"] > 0 and {c["verdict"] for c in failing["items"]} <= {"fail", "error"}
    repeated = api.get(f"/runs/{run}/cases", params=[("verdict", "fail"),
                                                      ("verdict", "error")]).json()
    assert repeated["total"] == failing["total"]
    errors = api.get(f"/runs/{run}/cases", params={
        "evaluator": "correctness", "evaluator_state": "error", "limit": 500}).json()
    assert errors["total"] > 0
    assert all(c["scores"]["correctness"]["state"] == "error" for c in errors["items"])
    failed = api.get(f"/runs/{run}/cases", params={
        "evaluator": "relevance", "evaluator_state": "failed", "limit": 500}).json()
    assert all(c["scores"]["relevance"]["passed"] is False for c in failed["items"])
    skipped = api.get(f"/runs/{run}/cases", params={
        "evaluator": "tool_order", "evaluator_state": "skipped"}).json()
    assert skipped["total"] > 0
    any_error = api.get(f"/runs/{run}/cases", params={"evaluator_state": "error",
                                                       "limit": 500}).json()
    assert any_error["total"] >= errors["total"]
    assert all(any(s["state"] == "error" for s in c["scores"].values())
               for c in any_error["items"])
    found = api.get(f"/runs/{run}/cases", params={"q": "CASE-000042"}).json()
    assert [c["case_id"] for c in found["items"]] == ["case-000042"]
    by_output = api.get(f"/runs/{ids['cand']}/cases", params={"q": "<script>alert(1)"}).json()
    assert [c["case_id"] for c in by_output["items"]] == ["case-000004"]
    assert by_output["items"][0]["output_preview"] == HOSTILE


def test_text_search_takes_wildcards_literally(api, ids):
    odd = ids["odd"]
    found = api.get(f"/runs/{odd}/cases", params={"q": "%_"}).json()["items"]
    assert {c["case_id"] for c in found} == {ODD_ID, "100%_done"}
    assert api.get(f"/runs/{odd}/cases", params={"q": "0%_d"}).json()["total"] == 1
    assert api.get(f"/runs/{odd}/cases", params={"q": "_x_"}).json()["total"] == 0


LETTERED = ["ÉTÉ-1", "été-2", "Straße-3", "STRASSE-4", "ΣΟΦΊΑ-5", "plain-6", "\uff30\uff2c\uff21\uff29\uff2e-7",
            "ﬁle-8"]
"""Case ids, run names and suites whose letters are not all ASCII."""


def _write_lettered(url: str) -> None:
    store = RunStore(url)
    for n, text in enumerate(LETTERED):
        run = store.create_run(text, {"suite_name": text}, run_id=f"run-{n}")
        store.annotate_run(run, name=f"name {text}", tags=None, notes=None)
        for case_id in LETTERED:
            store_case(store, CaseRecord(
                run_id=run, case_id=case_id, case=Case(id=case_id, input="q"),
                execution=Execution(input="q", output="a"),
                scores=[Score(name="exact", value=1.0, passed=True)], score=1.0,
                verdict=Verdict.PASS))
        store.flush()
        store.set_status(run, "completed", {"cases": len(LETTERED)})
    store.close()


@pytest.fixture(scope="module",
                params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def lettered(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) \
        -> Iterator[httpx.Client]:
    """A server over runs and cases named in letters beyond ASCII."""
    with contextlib.ExitStack() as stack:
        url = f"sqlite:///{tmp_path_factory.mktemp('letters')}/runs.db" \
            if request.param == "sqlite" else stack.enter_context(fresh_database(postgres_url()))
        _write_lettered(url)
        served = stack.enter_context(serve(url))
        yield stack.enter_context(served.client())


@pytest.mark.parametrize(("query", "found"), [
    ("été", {"ÉTÉ-1", "été-2"}), ("ÉTÉ", {"ÉTÉ-1", "été-2"}),
    ("straße", {"Straße-3", "STRASSE-4"}), ("STRASSE", {"Straße-3", "STRASSE-4"}),
    ("\uff33\uff34\uff32\uff21ẞ\uff25", {"Straße-3", "STRASSE-4"}), ("σοφία", {"ΣΟΦΊΑ-5"}), ("ΣΟΦΊΑ", {"ΣΟΦΊΑ-5"}),
    ("PLAIN", {"plain-6", "\uff30\uff2c\uff21\uff29\uff2e-7"}), ("\uff50\uff4c\uff41\uff49\uff4e-7", {"\uff30\uff2c\uff21\uff29\uff2e-7"}), ("FILE", {"ﬁle-8"}),
])
def test_every_search_finds_its_text_in_any_case_beyond_ascii_and_finds_the_same(
        lettered, query, found):
    runs = lettered.get("/runs", params={"q": query}).json()["items"]
    assert {r["suite"] for r in runs} == found
    cases = lettered.get("/runs/run-0/cases", params={"q": query}).json()["items"]
    assert {c["case_id"] for c in cases} == found
    compared = lettered.get("/runs/compare", params={
        "baseline_run_id": "run-0", "candidate_run_id": "run-1", "case_q": query}).json()
    assert {c["test_case_id"] for c in compared["test_case_comparisons"]} == found


PAIR = {"baseline_run_id": "run-0", "candidate_run_id": "run-1"}


@pytest.mark.parametrize(("path", "name"), [
    ("/runs", "q"), ("/runs/run-0/cases", "q"), ("/runs/run-0/export", "q"),
    ("/runs/compare", "case_q"), ("/runs/compare/export", "case_q")])
@pytest.mark.parametrize("text", ["a\nb", "\x1b[2J", "\t"])
def test_every_search_refuses_a_control_character_naming_its_parameter(lettered, path, name,
                                                                       text):
    given = {**(PAIR if "compare" in path else {}), name: text}
    body = _error(lettered.get(path, params=given), 400)
    assert body["detail"].startswith(f"query parameter {name!r}: the search holds the "
                                     "control character"), body


def test_cases_sort_by_score_and_by_one_evaluators_value(api, ids):
    run = ids["base"]
    up = [c["score"] for c in api.get(f"/runs/{run}/cases", params={
        "sort": "score", "limit": 500}).json()["items"]]
    values = [v for v in up if v is not None]
    assert values == sorted(values) and up[-1] is None  # no score sorts last
    down = [c["score"] for c in api.get(f"/runs/{run}/cases", params={
        "sort": "-score", "limit": 500}).json()["items"] if c["score"] is not None]
    assert down == sorted(down, reverse=True)
    by_eval = [c["scores"]["relevance"]["value"] for c in api.get(f"/runs/{run}/cases", params={
        "sort": "-score", "evaluator": "relevance", "limit": 500}).json()["items"]]
    numbers = [v for v in by_eval if v is not None]
    assert numbers == sorted(numbers, reverse=True)


@pytest.mark.parametrize(("params", "named"), [
    ({"verdict": "great"}, "verdict"), ({"sort": "random"}, "sort"),
    ({"evaluator": "x",
                                                   "evaluator_state": "bad"}, "evaluator_state"),
    ({"limit": 501}, "limit"), ({"q": "q" * 501}, "q"),
])
def test_malformed_case_parameters_are_400(api, ids, params, named):
    body = _error(api.get(f"/runs/{ids['base']}/cases", params=params), 400)
    assert named in body["detail"]


def test_one_case_has_every_score_transcript_tool_call_chunk_and_turn(api, ids):
    detail = api.get(f"/runs/{ids['cand']}/case", params={"case_id": "case-000004"}).json()
    record = detail["record"]
    assert record["execution"]["output"] == HOSTILE
    assert [s["name"] for s in record["scores"]] == ["correctness", "relevance", "tool_order"]
    judged = record["scores"][0]
    assert judged["details"]["judge_request"][0]["role"] == "system"
    assert "judge_answer" in judged["details"] and judged["raw"] is not None
    assert [t["name"] for t in detail["tool_calls"]] == ["calculator"]
    assert detail["tool_calls"][0]["args"] == {"a": 4, "b": 4}
    assert len(record["execution"]["messages"]) == 4
    assert record["execution"]["retrieved_context"][0]["doc_uri"] == "docs://math/4"


def test_any_case_id_names_its_case(api, ids):
    detail = api.get(f"/runs/{ids['odd']}/case", params={"case_id": ODD_ID}).json()
    assert detail["record"]["case_id"] == ODD_ID
    _error(api.get(f"/runs/{ids['odd']}/case", params={"case_id": ODD_ID, "repeat": 1}), 404)
    _error(api.get(f"/runs/{ids['odd']}/case", params={"case_id": ""}), 400)
    _error(api.get(f"/runs/{ids['odd']}/case", params={"case_id": "x", "repeat": "one"}), 400)


def test_a_huge_case_lists_as_a_short_preview_and_reads_whole(api, ids):
    started = time.monotonic()
    page = api.get(f"/runs/{ids['odd']}/cases").json()
    assert time.monotonic() - started < 5
    huge = next(c for c in page["items"] if c["case_id"] == "huge")
    assert len(huge["output_preview"]) <= 241 and huge["output_preview"].startswith("xxx")
    shown = api.get(f"/runs/{ids['odd']}/case", params={"case_id": "huge"}).json()
    [cut] = shown["cuts"]
    assert cut["pointer"] == "/record/execution/output" and cut["total"] == len(HUGE)
    whole = api.get(f"/runs/{ids['odd']}/case/value",
                    params={"case_id": "huge", "pointer": cut["pointer"]}).json()
    assert whole["text"] == HUGE and whole["length"] == len(HUGE)


def test_histograms_count_every_value_once_and_errors_apart(api, ids):
    hist = api.get(f"/runs/{ids['base']}/histograms").json()
    run = api.get(f"/runs/{ids['base']}").json()["summary"]
    assert sum(hist["cases"]) + hist["case_errors"] == run["cases"]
    for name, bins in hist["evaluators"].items():
        e = run["evaluators"][name]
        assert sum(bins) == e["scored"]
        assert hist["evaluator_errors"].get(name, 0) == e["errors"]
        assert hist["evaluator_skips"].get(name, 0) == e["skipped"]


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgresql",
                                                             marks=pytest.mark.postgres)])
def test_histograms_count_a_measurement_apart_from_skips_as_the_summary_does(backend,
                                                                          tmp_path):
    """A measurement (a length, a 1-5 rating) is a score with no value, as a skip is; the run's
    summary and its evaluator table count it apart from skips, and so do the histograms (the
    same page's captions said "1 skipped" where the table said 0)."""
    from assay.judges.feedback import measured
    from assay.types.records import EvaluatorSpec, RunSnapshot, SummaryBuilder

    with contextlib.ExitStack() as stack:
        url = f"sqlite:///{tmp_path / 'runs.db'}" if backend == "sqlite" else \
            stack.enter_context(fresh_database(postgres_url()))
        store = RunStore(url)
        names = ("length", "context", "judge")
        snapshot = RunSnapshot(suite_name="measured", evaluators=[
            EvaluatorSpec(name=n, type="python_scorer") for n in names])
        run_id = store.create_run("measured", snapshot.model_dump(mode="json"))
        builder = SummaryBuilder()
        for i in range(3):
            scores = [measured("length", 12 + i, "number"),
                      Score.not_applicable("context", "no context") if i else
                      Score(name="context", value=0.5, passed=False),
                      Score.failed("judge", "judge_output_invalid", "not JSON") if i == 2 else
                      Score(name="judge", value=0.9, passed=True)]
            record = CaseRecord(run_id=run_id, case_id=f"c{i}", case=Case(id=f"c{i}", input="q"),
                                execution=Execution(output="a"), scores=scores, score=0.7,
                                verdict=Verdict.BORDERLINE)
            store_case(store, record)
            builder.add(record)
        store.flush()
        summary = builder.build()
        store.set_status(run_id, "completed", summary.model_dump(mode="json"))
        store.close()
        with serve(url) as served, served.client() as client:
            hist = client.get(f"/runs/{run_id}/histograms").json()
    counted = {name: (e.errors, e.skipped, e.measured) for name, e in summary.evaluators.items()}
    assert counted == {"length": (0, 0, 3), "context": (0, 2, 0), "judge": (1, 0, 0)}
    assert {name: (hist["evaluator_errors"].get(name, 0), hist["evaluator_skips"].get(name, 0),
                   hist.get("evaluator_measurements", {}).get(name, 0)) for name in names} \
        == counted


# -- compare and baselines -------------------------------------------------------------------


def test_compare_answers_like_connexity(api, ids):
    refused = _error(api.get("/runs/compare", params={
        "baseline_run_id": ids["base"], "candidate_run_id": ids["cand"]}), 400)
    assert "judge model changed" in refused["detail"]  # another ruler: refused unless allowed
    assert refused["detail"].endswith("Compare them anyway with allow_different_judge=true")
    response = api.get("/runs/compare", params={
        "baseline_run_id": ids["base"], "candidate_run_id": ids["cand"],
        "max_latency_increase_pct": 0.3, "allow_different_judge": "true"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["verdict"]["thresholds_used"] == {
        "max_pass_rate_drop": 0.0, "max_avg_score_drop": 5.0, "max_latency_increase_pct": 0.3,
        "latency_floor_ms": 50.0}
    assert body["verdict"]["regression_detected"] is True and body["exit_status"] == 1
    assert any(r.startswith("pass rate dropped") for r in body["verdict"]["reasons"])
    assert body["headline_text"].startswith("regression detected")
    statuses = [c["status"] for c in body["test_case_comparisons"]]
    rank = {"regression": 0, "error": 1, "improvement": 2, "unchanged": 3}
    assert [rank[s] for s in statuses] == sorted(rank[s] for s in statuses)
    aggregate = body["aggregate"]
    assert aggregate["total_regressions"] == statuses.count("regression") > 0
    assert sum(aggregate[f"total_{k}"] for k in
               ("regressions", "improvements", "unchanged", "errors")) == 60
    assert body["config_diff"]["judge_model_changed"] == {
        "field": "judge.model", "old_value": "openai:gpt-4o-mini", "new_value": "openai:gpt-4o"}
    assert body["comparable"] is False and body["comparability"]
    assert set(body["baseline_run"]["summary"]["evaluators"]) == {
        "correctness", "relevance", "tool_order"}
    assert body["baseline_run"]["id"] == ids["base"] and body["cases_truncated"] is False
    assert aggregate["pass_rate_delta"] < 0


def test_compare_reports_the_significance_of_each_reason(api, ids):
    allow = {"allow_different_judge": "true"}
    body = api.get("/runs/compare", params={
        "baseline_run_id": ids["base"], "candidate_run_id": ids["cand"], **allow}).json()
    cases = body["significance"]["cases"]
    assert cases["method"].startswith("mcnemar") and cases["n_paired"] == 60
    assert 0 <= cases["p_value"] < 0.05 and cases["significant"] is True
    assert body["significance"]["score"]["method"].startswith("wilcoxon")
    latency = body["significance"]["latency"]  # no spread: NaN is sent as null, not NaN
    assert latency["significant"] is False and latency["effect_size"] is None
    reason = next(r for r in body["verdict"]["reason_details"] if r["check"] == "pass_rate")
    assert reason["significance"] == "cases" and reason["p_value"] == cases["p_value"]
    assert reason["significant"] is True and reason["counted"] is True
    strict = api.get("/runs/compare", params={
        "baseline_run_id": ids["base"], "candidate_run_id": ids["cand"],
        "require_significance": 1e-12, **allow}).json()["verdict"]
    assert strict["require_significance"] == 1e-12
    assert strict["regression_detected"] is False
    assert {r["tag"] for r in strict["reason_details"]} == {"not_significant"}
    for level in ("0", "1", "nan"):
        _error(api.get("/runs/compare", params={
            "baseline_run_id": ids["base"], "candidate_run_id": ids["cand"],
            "require_significance": level}), 400)


def test_compare_refusals_are_connexitys_404_and_400(api, ids):
    def compare(base: str, cand: str) -> httpx.Response:
        return api.get("/runs/compare", params={"baseline_run_id": base,
                                                "candidate_run_id": cand})

    assert _error(compare("gone", ids["cand"]), 404)["detail"] == "Baseline run not found"
    assert _error(compare(ids["base"], "gone"), 404)["detail"] == "Candidate run not found"
    assert _error(compare(ids["base"][:6], ids["cand"]), 404)["detail"] == \
        "Baseline run not found"  # ids are exact: no prefix matching in the API
    assert _error(compare(ids["base"], ids["interrupted"]), 400)["detail"] == \
        "Candidate run is not completed (status: interrupted)"
    assert _error(compare(ids["interrupted"], ids["base"]), 400)["detail"] == \
        "Baseline run is not completed (status: interrupted)"
    disjoint = _error(compare(ids["base"], ids["odd"]), 400)
    assert "share no case" in disjoint["detail"]
    _error(api.get("/runs/compare", params={"baseline_run_id": ids["base"]}), 400)
    for value in ("lots", "nan", "-1"):
        _error(api.get("/runs/compare", params={
            "baseline_run_id": ids["base"], "candidate_run_id": ids["cand"],
            "max_avg_score_drop": value}), 400)


def test_one_baseline_per_suite_and_target_and_only_completed_runs(api, ids):
    assert _error(api.get("/runs/baseline", params={"suite": "math",
                                                    "target": "calculator-agent"}), 404)
    first = api.patch(f"/runs/{ids['base']}", json={"is_baseline": True})
    assert first.status_code == 200 and first.json()["is_baseline"] is True
    second = api.patch(f"/runs/{ids['cand']}", json={"is_baseline": True}).json()
    assert second["is_baseline"] is True
    assert api.get(f"/runs/{ids['base']}").json()["is_baseline"] is False
    assert api.get(f"/runs/{ids['base']}").json()["baseline_id"] == ids["cand"]
    found = api.get("/runs/baseline", params={"suite": "math", "target": "calculator-agent"})
    assert found.json()["id"] == ids["cand"]
    refused = _error(api.patch(f"/runs/{ids['interrupted']}", json={"is_baseline": True}), 400)
    assert refused["detail"] == "Only completed runs can be marked as baseline " \
        "(status=interrupted)"
    _error(api.patch(f"/runs/{ids['base']}", json={"is_baseline": "maybe"}), 400)
    _error(api.patch(f"/runs/{ids['base']}", json={"other": True}), 400)
    _error(api.patch(f"/runs/{ids['base']}", content=b"{not json",
                     headers={"content-type": "application/json"}), 400)
    listed = {r["id"]: r["is_baseline"] for r in api.get("/runs").json()["items"]}
    assert listed[ids["cand"]] is True and listed[ids["base"]] is False
    assert api.patch(f"/runs/{ids['cand']}", json={"is_baseline": False}).json()[
        "is_baseline"] is False
    _error(api.get("/runs/baseline", params={"suite": "math", "target": "calculator-agent"}), 404)


# -- deleting --------------------------------------------------------------------------------


def test_delete_removes_a_run_and_refuses_a_running_one(tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    done = write_run(store, 5, seed=1)
    running = write_run(store, 2, seed=2, status=RunStatus.RUNNING)
    store.close()
    with serve(url) as served, served.client() as api:
        assert api.delete(f"/runs/{done}").status_code == 200
        _error(api.get(f"/runs/{done}"), 404)
        _error(api.get(f"/runs/{done}/cases"), 404)
        assert "running" in _error(api.delete(f"/runs/{running}"), 409)["detail"]
    store = RunStore(url)
    assert store.case_records(done) == [] and store.scores(done) == {}
    store.close()


def test_of_concurrent_deletes_of_a_run_one_deletes_it_and_the_others_are_told_it_is_gone(
        tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    runs = [write_run(store, 3, seed=i) for i in range(5)]
    store.close()
    with serve(url) as served:
        for run in runs:
            ready = threading.Barrier(6)
            answers: list[httpx.Response] = []

            def delete(run: str = run, ready: threading.Barrier = ready,
                       answers: list[httpx.Response] = answers) -> None:
                with served.client() as api:
                    ready.wait()
                    answers.append(api.delete(f"/runs/{run}"))

            threads = [threading.Thread(target=delete) for _ in range(6)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            statuses = sorted(a.status_code for a in answers)
            assert statuses == [200] + [404] * 5, statuses
            for gone in (a for a in answers if a.status_code == 404):
                assert _error(gone, 404)["code"] == "run_not_found"


# -- auth, limits, headers -------------------------------------------------------------------

TOKEN = "t0ken-" + "s" * 20


def test_a_token_is_required_and_checked(tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    run = write_run(store, 3)
    store.close()
    with serve(url, token=TOKEN) as served:
        with served.client() as anonymous:
            for method, path in [("GET", "/runs"), ("GET", f"/runs/{run}"),
                                 ("GET", f"/runs/{run}/cases"), ("DELETE", f"/runs/{run}"),
                                 ("GET", "/runs/compare"), ("POST", "/runs"),
                                 ("GET", "/nothing/here")]:
                refused = anonymous.request(method, path)
                body = _error(refused, 401)
                assert body["code"] == "unauthorized"
                assert refused.headers["www-authenticate"].startswith("Bearer")
            # the UI's own files hold no data and load without it
            assert anonymous.get("/").status_code == 200
            assert anonymous.get("/static/app.js").status_code == 200
        with served.client(token="wrong-" + "x" * 20) as wrong:
            _error(wrong.get("/runs"), 401)
        with httpx.Client(base_url=served.url, headers={"Authorization": TOKEN}) as no_scheme:
            _error(no_scheme.get("/runs"), 401)
        with served.client(token=TOKEN) as good:
            assert good.get("/runs").json()["total"] == 1
            assert good.get(f"/runs/{run}/cases").status_code == 200


def test_serving_beyond_loopback_needs_a_token(tmp_path, monkeypatch):

    from assay.errors import ConfigError
    from assay.server.settings import ServerSettings

    monkeypatch.delenv("ASSAY_SERVER_TOKEN", raising=False)
    url = f"sqlite:///{tmp_path}/runs.db"
    with pytest.raises(ConfigError, match="ASSAY_SERVER_TOKEN"):
        ServerSettings.from_environment(url, host="0.0.0.0")
    with pytest.raises(ConfigError, match="too short"):
        ServerSettings(store_url=url, token="short").check()
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        ServerSettings.from_environment(url, host=host)
    done = run_assay(["serve", "--store", url, "--host", "0.0.0.0", "--port", "0"],
                     timeout=60, env={k: v for k, v in os.environ.items()
                                      if k != "ASSAY_SERVER_TOKEN"})
    assert done.returncode == 2
    assert "ASSAY_SERVER_TOKEN" in done.stderr and "Traceback" not in done.stderr


def test_without_a_token_only_requests_addressed_to_localhost_are_answered(tmp_path):
    with serve(f"sqlite:///{tmp_path}/runs.db") as served:
        with served.client(headers={"Host": "attacker.example"}) as rebound:
            assert _error(rebound.get("/runs"), 421)["code"] == "host_not_allowed"
        with served.client(headers={"Host": "localhost:1234"}) as local:
            assert local.get("/runs").status_code == 200


def test_request_bodies_over_the_limit_are_413(tmp_path):
    with serve(f"sqlite:///{tmp_path}/runs.db", max_body_bytes=1000) as served, \
            served.client() as api:
        big = b'{"suite": "' + b"x" * 5000 + b'"}'
        assert _error(api.post("/runs", content=big,
                               headers={"content-type": "application/json"}), 413)

        def chunks() -> Iterator[bytes]:
            yield b'{"suite": "'
            for _ in range(10):
                yield b"x" * 500
            yield b'"}'

        _error(api.post("/runs", content=chunks(),
                        headers={"content-type": "application/json"}), 413)


def test_pages_and_answers_carry_a_strict_content_security_policy(api):
    for path in ("/", "/runs", "/static/app.js"):
        headers = api.get(path).headers
        policy = headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy
        assert "default-src 'none'" in policy
        assert headers["x-content-type-options"] == "nosniff"
        assert "access-control-allow-origin" not in headers
    preflight = api.options("/runs", headers={"Origin": "https://elsewhere.example",
                                              "Access-Control-Request-Method": "DELETE"})
    assert "access-control-allow-origin" not in preflight.headers


def test_the_openapi_document_describes_the_records(api):
    doc = api.get("/openapi.json").json()
    paths = doc["paths"]
    for path in ("/runs", "/runs/{run_id}", "/runs/{run_id}/cases", "/runs/{run_id}/case",
                 "/runs/compare", "/runs/baseline", "/runs/{run_id}/stream",
                 "/runs/{run_id}/cancel", "/runs/{run_id}/histograms"):
        assert path in paths, path
    schemas = doc["components"]["schemas"]
    assert {"CaseRecord", "RunSummary", "Score", "Execution", "ServedComparison",
            "PairedComparison", "ComparisonVerdict", "ConfigDiff"} <= set(schemas)
    compare = paths["/runs/compare"]["get"]
    assert "require_significance" in {p["name"] for p in compare["parameters"]}
    assert "404" in paths["/runs/{run_id}"]["get"]["responses"]


# -- a store that cannot be read ----------------------------------------------------------------


def test_an_unreachable_store_is_503_naming_it_without_its_password():
    url = "postgresql+psycopg://assay:hunter2secret@127.0.0.1:9/assay"
    with serve(url) as served, served.client() as api:
        for path in ("/runs", "/runs/x", "/health"):
            body = _error(api.get(path), 503)
            assert body["code"] == "store_unavailable"
            assert "hunter2secret" not in body["detail"] and "127.0.0.1:9" in body["detail"]
        assert api.get("/").status_code == 200  # the UI still loads, to say so


def test_a_store_from_a_newer_assay_is_503_saying_so(tmp_path):
    from sqlalchemy import create_engine, text

    url = f"sqlite:///{tmp_path}/runs.db"
    RunStore(url).close()
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE assay_alembic_version SET version_num = '9999_future'"))
    engine.dispose()
    with serve(url) as served, served.client() as api:
        body = _error(api.get("/runs"), 503)
        assert "newer version of assay" in body["detail"]


# -- starting runs -----------------------------------------------------------------------------


def test_a_run_started_over_the_api_streams_its_progress_and_is_stored(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    echo_suite(tmp_path, 4)
    url = f"sqlite:///{tmp_path}/runs.db"
    with serve(url, suite_roots=[tmp_path]) as served, served.client() as api:
        started = api.post("/runs", json={"suite": "echo/EVAL.yaml", "concurrency": 2})
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        streamed = events(api, started.json()["stream"])
        names = [n for n, _ in streamed]
        assert names[0] == "run_created" and "run_started" in names
        assert names[-1] == "run_completed" and names.count("test_case_completed") == 4
        last_case = [d for n, d in streamed if n == "test_case_completed"][-1]
        assert last_case["completed_count"] == 4 == last_case["total_count"]
        assert {"passed", "overall_score", "error_message"} <= set(last_case)
        run = api.get(f"/runs/{run_id}").json()
        assert run["status"] == "completed" and run["summary"]["cases"] == 4
        # a finished run's stream says how it ended and closes
        assert [n for n, _ in events(api, f"/runs/{run_id}/stream")][-1] == "run_completed"


def test_a_run_started_over_the_api_can_be_cancelled(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    echo_suite(tmp_path, 40, sleep=0.2)
    url = f"sqlite:///{tmp_path}/runs.db"
    with serve(url, suite_roots=[tmp_path]) as served, served.client() as api:
        run_id = api.post("/runs", json={"suite": "echo/EVAL.yaml", "concurrency": 1}
                          ).json()["run_id"]
        assert api.get(f"/runs/{run_id}").json()["running_here"] is True
        _error(api.delete(f"/runs/{run_id}"), 409)
        time.sleep(0.5)
        cancelled = api.post(f"/runs/{run_id}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["status"] == "interrupted"
        streamed = events(api, f"/runs/{run_id}/stream")
        assert streamed[-1][0] == "run_cancelled" and streamed[-1][1]["completed_count"] < 40
        _error(api.post(f"/runs/{run_id}/cancel"), 409)


@pytest.mark.parametrize("suite", ["../outside/EVAL.yaml", "/etc/passwd", "missing.yaml"])
def test_runs_of_suites_outside_the_roots_are_refused(tmp_path, suite):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "EVAL.yaml").write_text("evalcases: []\n")
    with serve(f"sqlite:///{tmp_path}/runs.db", suite_roots=[root]) as served, \
            served.client() as api:
        body = _error(api.post("/runs", json={"suite": suite}), 404)
        assert body["code"] == "unknown_suite"
        _error(api.post("/runs", json={"suite": "x", "concurrency": 0}), 400)
        _error(api.post("/runs", content=b"suite=x",
                        headers={"content-type": "application/x-www-form-urlencoded"}), 400)


@pytest.mark.parametrize("field", ["suite", "target", "judge_model", "filter"])
def test_control_characters_in_a_run_request_are_a_400_not_a_crash(tmp_path, field):
    with serve(f"sqlite:///{tmp_path}/runs.db", suite_roots=[tmp_path]) as served, \
            served.client() as api:
        body = {"suite": "EVAL.yaml", field: "\u0000\u0087\u001b\u0013"}
        error = _error(api.post("/runs", json=body), 400)
        assert field in json.dumps(error)


def test_a_suite_that_cannot_load_is_a_400_naming_the_problem(tmp_path):
    (tmp_path / "bad.yaml").write_text("evalcases: [unclosed\n")
    with serve(f"sqlite:///{tmp_path}/runs.db", suite_roots=[tmp_path]) as served, \
            served.client() as api:
        body = _error(api.post("/runs", json={"suite": "bad.yaml"}), 400)
        assert "bad.yaml" in body["detail"]
