"""One answer everywhere: the same pair of runs gets the same verdict, the same per-case
counts and the same exit code from ``assay compare --json``, ``assay.compare()`` and
``GET /runs/compare`` (the web UI renders the last; ``test_browser`` checks the page), under
each policy (default, Connexity, Databricks) and for every kind of pair (equal, better, worse,
incomparable). Identical runs (A/A) never regress, whatever their agent.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

import assay
from assay.analysis.compare import IncomparableRuns
from assay.cli import app as cli_app
from assay.report.comparison import case_rows
from assay.run.policies.base import LATENCY_FLOOR_MS
from assay.store.runs import RunStore
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.records import (
    CaseRecord,
    EvaluatorSpec,
    RunSnapshot,
    SummaryBuilder,
    Verdict,
)
from assay.types.score import Score
from tests.server_support import serve

CASES = [f"c{i:02d}" for i in range(12)]
POLICIES = ("default", "connexity", "databricks")
PAIRS = ("equal", "better", "worse", "incomparable")


def _record(run_id: str, policy: str, case_id: str, good: bool) -> CaseRecord:
    """One case of a run judged well (``good``) or badly, as its policy would record it."""
    if policy == "databricks":
        score = Score(name="correctness", value=1.0 if good else 0.0, scale="yes/no",
                      label="yes" if good else "no")
    else:
        score = Score(name="judge", value=0.9 if good else 0.4)
    overall = (90.0 if good else 40.0) if policy == "connexity" else None
    return CaseRecord(run_id=run_id, case_id=case_id, case=Case(id=case_id, input="q"),
                      execution=Execution(output="a", latency_ms=100.0), scores=[score],
                      score=0.9 if good else 0.4, overall_score=overall,
                      verdict=Verdict.PASS if good else Verdict.FAIL)


def _store_run(store: RunStore, run_id: str, policy: str, good: set[str],
               evaluator: str = "judge") -> None:
    run = {"scoring": policy, **({"naming": "databricks"} if policy == "databricks" else {})}
    name = "correctness" if policy == "databricks" else evaluator
    snapshot = RunSnapshot(suite_name="s", suite_hash="h", judge_models=["fake:judge"],
                           evaluators=[EvaluatorSpec(name=name, type=evaluator)], run=run)
    store.create_run("s", snapshot.model_dump(mode="json"), run_id=run_id)
    builder = SummaryBuilder()
    for case_id in CASES:
        record = _record(run_id, policy, case_id, case_id in good)
        store.record_execution(run_id, case_id, 0, record.execution)
        for score in record.scores:
            store.record_score(run_id, case_id, 0, score)
        store.record_case(record)
        builder.add(record)
    summary = builder.build()
    summary.passed = True
    store.flush()
    store.set_status(run_id, "completed", summary.model_dump(mode="json"))


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Per policy, a baseline and four candidates: equal, better, worse and incomparable."""
    path = tmp_path_factory.mktemp("one-answer") / "runs.db"
    url = f"sqlite:///{path}"
    store = RunStore(url)
    half = set(CASES[:6])
    for policy in POLICIES:
        _store_run(store, f"{policy}-base", policy, half)
        _store_run(store, f"{policy}-equal", policy, half)
        _store_run(store, f"{policy}-better", policy, half | set(CASES[6:9]))
        _store_run(store, f"{policy}-worse", policy, set(CASES[:3]))
        _store_run(store, f"{policy}-incomparable", policy, half, evaluator="other_judge")
    store.close()
    yield url


@pytest.fixture(scope="module")
def api(stored: str) -> Iterator[httpx.Client]:
    with serve(stored) as served, served.client() as client:
        yield client


def answers(stored: str, api: httpx.Client, policy: str, pair: str,
            runs: tuple[str, str] | None = None) -> list[dict[str, Any]]:
    """What each surface says of one pair (``runs``, else the policy's baseline and its
    ``pair`` candidate): its exit code, verdict and counts."""
    base, cand = runs or (f"{policy}-base", f"{policy}-{pair}")
    found = []
    done = CliRunner().invoke(cli_app, ["compare", base, cand, "--store", stored, "--json"])
    if done.exit_code == 2:
        found.append({"exit": 2})
    else:
        data = json.loads(done.output)
        found.append({"exit": done.exit_code, "regressed": data["verdict"]["regression_detected"],
                      "counts": _counts(data["aggregate"]), "policy": data["policy"]})
    try:
        result = assay.compare(base, cand, store=stored)
    except IncomparableRuns:
        found.append({"exit": 2})
    else:
        found.append({"exit": result.exit_code(), "regressed": result.verdict.regression_detected,
                      "counts": _counts(result.aggregate.model_dump()), "policy": result.policy})
    response = api.get("/runs/compare", params={"baseline_run_id": base,
                                                "candidate_run_id": cand})
    if response.status_code == 400:
        found.append({"exit": 2})
    else:
        data = response.json()
        found.append({"exit": data["exit_status"],
                      "regressed": data["verdict"]["regression_detected"],
                      "counts": _counts(data["aggregate"]), "policy": data["policy"]})
    return found


def _counts(aggregate: dict[str, Any]) -> tuple[int, int, int, int]:
    return (aggregate["total_regressions"], aggregate["total_improvements"],
            aggregate["total_unchanged"], aggregate["total_errors"])


EXPECTED = {"equal": (0, False, (0, 0, 12, 0)), "better": (0, False, (0, 3, 9, 0)),
            "worse": (1, True, (3, 0, 9, 0))}


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("pair", PAIRS)
def test_every_surface_gives_the_same_answer(stored, api, policy, pair):
    said = answers(stored, api, policy, pair)
    assert said[0] == said[1] == said[2], said
    if pair == "incomparable":
        assert said[0] == {"exit": 2}
        return
    code, regressed, counts = EXPECTED[pair]
    assert said[0] == {"exit": code, "regressed": regressed, "counts": counts,
                       "policy": policy}


# -- A/A: identical runs never regress -----------------------------------------------------


def _rows(count: int = 20) -> list[dict[str, Any]]:
    return [{"id": f"q{i}", "input": f"question {i}", "expected_output": f"answer {i}"}
            for i in range(count)]


def quick_agent(question: str) -> str:
    """A Python agent that takes a few microseconds."""
    return question.replace("question", "answer")


def jittery_agent(question: str) -> str:
    """A Python agent whose time varies from call to call (0-20 ms), as real ones do."""
    time.sleep((hash(question) % 20) / 1000)
    return question.replace("question", "answer")


def _twice(tmp_path: Path, **options: Any) -> tuple[Any, Any]:
    store = f"sqlite:///{tmp_path / 'aa.db'}"
    first = assay.evaluate(_rows(), evaluators=["exact_match"], store=store, cache="off",
                           **options)
    second = assay.evaluate(_rows(), evaluators=["exact_match"], store=store, cache="off",
                            **options)
    return store, assay.compare(first.run_id, second.run_id, store=store)


@pytest.mark.parametrize("agent", [quick_agent, jittery_agent])
@pytest.mark.parametrize("concurrency", [1, 8])
def test_a_python_agent_against_itself_never_regresses(tmp_path, agent, concurrency):
    _, result = _twice(tmp_path, target=agent, concurrency=concurrency)
    assert not result.verdict.regression_detected, result.verdict.reasons
    assert result.exit_code() == 0 and result.aggregate.total_unchanged == 20


def test_a_quick_python_agents_latency_is_its_own_time(tmp_path):
    store = f"sqlite:///{tmp_path / 'own.db'}"
    result = assay.evaluate(_rows(40), target=quick_agent, evaluators=["exact_match"],
                            store=store, concurrency=16)
    latencies = [r.execution.latency_ms for r in result.records]
    assert all(x is not None and x < 5 for x in latencies), max(latencies)  # type: ignore


@pytest.mark.parametrize("repeat", range(3))
def test_recorded_outputs_against_themselves_never_regress(tmp_path, repeat):
    rows = [{**row, "output": row["expected_output"]} for row in _rows()]
    store = f"sqlite:///{tmp_path / 'rec.db'}"
    first = assay.evaluate(rows, evaluators=["exact_match"], store=store)
    second = assay.evaluate(rows, evaluators=["exact_match"], store=store)
    result = assay.compare(first.run_id, second.run_id, store=store)
    assert result.exit_code() == 0 and not result.verdict.reasons
    assert result.baseline.latency_avg_ms is None  # nothing was measured: no latency


def test_outputs_replayed_by_a_recorded_target_have_no_made_up_latency(tmp_path):
    (tmp_path / "outputs.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "output": f"answer {i}"}) + "\n" for i in range(5)))
    (tmp_path / "targets.yaml").write_text(
        "targets:\n  - name: replay\n    provider: recorded\n    path: outputs.jsonl\n")
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps(r) + "\n" for r in _rows(5)))
    result = assay.evaluate(suite, target="replay", evaluators=["exact_match"],
                            targets_file=str(tmp_path / "targets.yaml"),
                            store=f"sqlite:///{tmp_path / 'replay.db'}")
    assert [r.execution.latency_ms for r in result.records] == [None] * 5


def test_an_http_agent_against_itself_never_regresses(tmp_path, mock_server):
    (tmp_path / "targets.yaml").write_text(
        f"targets:\n  - name: bot\n    provider: http\n    url: {mock_server.url}/chat/completions\n")
    for _ in range(3):
        store = f"sqlite:///{tmp_path / 'http.db'}"
        first = assay.evaluate(_rows(), target="bot", evaluators=["contains"], store=store,
                               targets_file=str(tmp_path / "targets.yaml"), cache="off")
        second = assay.evaluate(_rows(), target="bot", evaluators=["contains"], store=store,
                                targets_file=str(tmp_path / "targets.yaml"), cache="off")
        result = assay.compare(first.run_id, second.run_id, store=store)
        # Only the agent's measured latency may differ: on a loaded machine the second run
        # can truly be slower, past the floor and the noise, which the latency rule reports.
        # Every figure that the same answers decide stays the same.
        said = [r for r in result.verdict.reason_details if r.check != "avg_latency"]
        assert not said, result.verdict.reasons
        assert result.aggregate.total_regressions == 0, result.verdict.reasons
        for latency in (r for r in result.verdict.reason_details if r.check == "avg_latency"):
            rose = result.aggregate.latency_avg_delta_ms
            assert rose is not None and rose > LATENCY_FLOOR_MS, latency.text


# -- one aggregation, one band ---------------------------------------------------------------


def test_assay_aggregate_is_what_a_run_reports(tmp_path):
    def flaky(outputs: str) -> float | None:
        if "3" in outputs:
            raise ValueError("cannot judge this one")
        return 0.25 if "1" in outputs else 1.0

    rows = [{"id": f"q{i}", "input": f"q{i}", "output": f"answer {i}"} for i in range(6)]
    result = assay.evaluate(rows, evaluators=[flaky], store=f"sqlite:///{tmp_path / 'a.db'}")
    scores = [record.score_named("flaky") for record in result.records]
    assert assay.aggregate(s for s in scores if s is not None) == \
        result.summary.evaluators["flaky"]
    assert result.summary.evaluators["flaky"].errors == 1  # counted, never averaged in


@pytest.mark.parametrize(("value", "verdict"), [
    (0.8, "pass"), (0.7999, "borderline"), (0.6, "borderline"), (0.5999, "fail"), (None, "error"),
    (0.7999999999999999, "pass"), (0.5999999999999999, "borderline")])  # 0.8 and 0.6 off by a
# floating-point rounding error, as a mean makes them: (0.7 + 0.8 + 0.9) / 3
def test_every_band_has_the_same_edges(value, verdict):
    from assay.analysis.compare_files import _band
    from assay.testing.runs import _verdict
    from assay.types.config import Thresholds
    from assay.types.score import Score, verdict_band

    said = {_band(value), _verdict(value).value, Thresholds().verdict(value).value}
    if value is not None:
        said.add(verdict_band(Score(name="x", value=value)))
    assert said == {verdict}


@assay.scorer
def at_seven(outputs: str) -> float:
    """A judge that always says 0.7."""
    return 0.7


@assay.scorer
def at_eight(outputs: str) -> float:
    """A judge that always says 0.8."""
    return 0.8


@assay.scorer
def at_nine(outputs: str) -> float:
    """A judge that always says 0.9."""
    return 0.9


def test_a_score_on_its_edge_in_decimals_is_on_it_on_every_surface(tmp_path):
    """0.7, 0.8 and 0.9 average 0.8, which binary floating point makes 0.7999999999999999:
    the case, whose score reads 0.800 everywhere, passes everywhere (it was borderline), and
    a run whose mean score is that meets a gate of 0.8 (it failed "mean score 0.800 is below
    the gate 0.800")."""
    store = f"sqlite:///{tmp_path / 'edge.db'}"
    result = assay.evaluate([{"id": "q", "input": "q", "output": "a"}],
                            evaluators=[at_seven, at_eight, at_nine], store=store,
                            gates={"min_mean_score": 0.8})
    record = result.records[0]
    assert record.score == (0.7 + 0.8 + 0.9) / 3 != 0.8  # the premise: a rounding error off
    assert (record.verdict, result.passed) == (Verdict.PASS, True), result.reason
    shown = CliRunner().invoke(cli_app, ["show", result.run_id, "--store", store])
    assert re.search(r"│ q\s+│ 0\.800 │ pass\s+│", shown.output), shown.output
    assert "gate pass" in shown.output
    with serve(store) as served, served.client() as client:
        row = client.get(f"/runs/{result.run_id}/cases").json()["items"][0]
        detail = client.get(f"/runs/{result.run_id}").json()
    assert (row["verdict"], row["display"]["score"]) == ("pass", "0.800")
    assert (detail["summary"]["passed"], detail["display"]["pass_rate"]) == (True, "100.0%")


@assay.scorer
def says_good(outputs: str) -> bool:
    """Passes an output that says "good"."""
    return outputs == "good"


def test_a_pass_rate_on_its_threshold_in_decimals_meets_it(tmp_path):
    """29 of 100 executions passed: 29.0%, which floating point made 28.999999999999996, so
    the cases dimension of 29% failed ("29.0% ... below the threshold 29.0%"). Met."""
    rows = [{"id": f"q{i}", "input": "q", "output": "good" if i < 29 else "bad"}
            for i in range(100)]
    result = assay.evaluate(rows, evaluators=[says_good], store=f"sqlite:///{tmp_path / 'r.db'}",
                            gates={"max_failed": None},
                            run_thresholds={"cases_pass_threshold": 29})
    assert result.display.cases_dimension == result.display.cases_threshold == "29.0%"
    assert result.summary.cases_passed is True and result.passed, result.reason


def _moved_run(store: str, scores: dict[str, float]) -> str:
    """A run whose case ``id`` the judge scores ``scores[id]`` (read from its output)."""
    rows = [{"id": case_id, "input": "q", "output": str(value)}
            for case_id, value in scores.items()]
    return assay.evaluate(rows, evaluators=[output_as_score], store=store,
                          gates={"max_failed": None}).run_id


@assay.scorer(name="judge")
def output_as_score(outputs: str) -> float:
    """A judge whose score is the output, read as a number."""
    return float(outputs)


def test_a_case_that_moved_exactly_the_change_that_counts_moved_on_every_surface(tmp_path):
    """Under the default policy a case regresses or improves on a move of at least 10 points
    (0.1). 0.57 -> 0.47 and 0.14 -> 0.24 are such moves, and every surface shows their change
    as -10.0 pt and +10.0 pt, but floating point made them 9.999999999999993 and
    9.999999999999998 points: both were "unchanged". They move, on every surface."""
    store = f"sqlite:///{tmp_path / 'moved.db'}"
    base = _moved_run(store, {"down": 0.57, "up": 0.14, "still": 0.5})
    cand = _moved_run(store, {"down": 0.47, "up": 0.24, "still": 0.5})
    with serve(store) as served, served.client() as client:
        said = answers(store, client, "", "", runs=(base, cand))
    assert said[0] == said[1] == said[2], said
    assert said[0]["counts"] == (1, 1, 1, 0) and said[0]["exit"] == 0, said
    compared = assay.compare(base, cand, store=store)
    rows = {row.case_id: (row.status, row.change) for row in case_rows(compared)}
    assert rows == {"down": ("regression", "-10.0 pt"), "up": ("improvement", "+10.0 pt"),
                    "still": ("unchanged", "+0.0 pt")}


def test_a_score_that_passed_its_evaluator_passes_assert_passes(tmp_path):
    """``assert_passes`` says what a run of the case says of the evaluator: a score that its
    evaluator passed by its own rule (low is good here) passes, and one it failed whatever
    its value (a required check, expected outcomes not met) fails. It held every value
    against the threshold instead, so the first failed and the second passed."""
    from assay.integrations.pytest_plugin import assert_passes
    from assay.types.score import Score

    @assay.scorer(name="harm")
    def low_is_good(outputs: str) -> Score:
        return Score(name="harm", value=0.1, passed=True, rationale="hardly any harm")

    @assay.scorer(name="outcomes")
    def outcome_unmet(outputs: str) -> Score:
        return Score(name="outcomes", value=0.9, passed=False, rationale="one outcome unmet")

    run = assay.evaluate([{"id": "c", "input": "q", "output": "a"}],
                         evaluators=[low_is_good, outcome_unmet],
                         store=f"sqlite:///{tmp_path / 'p.db'}")
    assert {name: (e.passed, e.failed) for name, e in run.summary.evaluators.items()} == \
        {"harm": (1, 0), "outcomes": (0, 1)}
    case = Case(id="c", input="q")
    assert assert_passes(low_is_good, case, "a").passed is True
    with pytest.raises(AssertionError, match=r"outcomes scored 0\.900"):
        assert_passes(outcome_unmet, case, "a")
    # a threshold given is the evaluator's for this judgement, as a suite's would be
    with pytest.raises(AssertionError, match=r"at_seven scored 0\.700 \(threshold 0\.800\)"):
        assert_passes(at_seven, case, "a")
    assert assert_passes(at_seven, case, "a", threshold=0.7).passed is True


# -- one cost --------------------------------------------------------------------------------


def test_a_fully_cached_rerun_costs_a_known_nothing_in_the_run_and_its_comparison(
        tmp_path, mock_server, monkeypatch):
    """Calls answered from the cache cost $0: the run says ``$0.0000`` for its judge, so its
    estimated cost (what ``assay compare`` and the reports show) is $0 too, not "unknown"."""
    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    store = f"sqlite:///{tmp_path / 'cost.db'}"
    runs = [assay.evaluate(_rows(), target=lambda question: question,
                           evaluators=["semantic_similarity"], store=store,
                           judge_model="openai:gpt-4o-mini") for _ in range(2)]
    first, cached = (run.summary for run in runs)
    assert first.usage.calls > 0 and first.estimated_cost_usd
    assert (cached.usage.calls, cached.usage.cached_calls) == (0, first.usage.calls)
    assert cached.estimated_cost_usd == 0.0
    compared = assay.compare(runs[0].run_id, runs[1].run_id, store=store)
    assert compared.aggregate.cost_delta_usd == round(-first.estimated_cost_usd, 6)
    shown = CliRunner().invoke(cli_app, ["compare", runs[0].run_id, runs[1].run_id,
                                         "--store", store])
    assert "unknown" not in shown.output and "$0.0000" in shown.output, shown.output


def test_latencies_of_0_and_1_ms_are_compared_as_numbers_not_as_pass_fail(tmp_path):
    """Which paired test a figure takes is the figure's, not its values': agent latencies
    that happen to be 0 and 1 ms are numbers (Wilcoxon), never pass/fail (McNemar)."""
    store = f"sqlite:///{tmp_path / 'latency.db'}"
    runs = [assay.evaluate(
        [{"id": f"q{i}", "input": "q", "output": "a", "latency_ms": float((i + shift) % 2)}
         for i in range(12)], evaluators=["contains"], store=store) for shift in (0, 1)]
    compared = assay.compare(runs[0].run_id, runs[1].run_id, store=store)
    latency = compared.significance["latency"]
    assert (latency.kind, latency.method) == ("numeric", "wilcoxon_exact"), latency
    assert compared.significance["cases"].kind == "binary"


def test_a_rescore_of_a_run_is_not_said_to_have_changed_its_suite(tmp_path):
    """A rescore judges the run's own stored outputs: comparing it with that run, with
    another rescore of it, with a rescore of that rescore or with any other run of the same
    suite must not warn that the suite changed, which it did not. A rescore judged by other
    evaluators did change what decides results, and says so."""
    store = f"sqlite:///{tmp_path / 'rescore.db'}"
    first, other = (assay.evaluate(_rows(), target=quick_agent, evaluators=["contains"],
                                   store=store) for _ in range(2))
    again = [assay.rescore(first.run_id, store=store) for _ in range(2)]
    twice = assay.rescore(again[0].run_id, store=store)
    for baseline, candidate in ((first.run_id, again[0].run_id),
                                (again[0].run_id, again[1].run_id),
                                (other.run_id, again[0].run_id),
                                (again[0].run_id, other.run_id),
                                (other.run_id, twice.run_id)):
        compared = assay.compare(baseline, candidate, store=store)
        assert not compared.verdict.regression_detected, compared.verdict.reasons
        assert not any("suite changed" in w for w in compared.warnings), compared.warnings
    judged_otherwise = assay.rescore(first.run_id, store=store, evaluators=["exact_match"])
    compared = assay.compare(other.run_id, judged_otherwise.run_id, store=store,
                             allow_different_evaluators=True)
    assert any("suite changed" in w for w in compared.warnings), compared.warnings


def test_a_candidate_that_failed_any_gate_of_its_own_fails_the_comparison(tmp_path):
    """`assay compare` printed "candidate's own gates failed: 1 case(s) failed" and then
    "no regression" with exit 0: only Connexity's run dimensions counted as its own gates.
    Any gate the run failed (here ``max_failed``) fails the comparison, on every surface,
    unless --no-fail-on-thresholds."""
    from assay.types.config import Gates

    store = f"sqlite:///{tmp_path / 'gates.db'}"
    rows = [{"id": f"q{i}", "input": f"q{i}", "output": "yes" if i else "no",
             "expected_output": "yes"} for i in range(4)]
    first, second = (assay.evaluate(rows, evaluators=["exact_match"], store=store,
                                    gates=Gates(max_failed=0)) for _ in range(2))
    assert not second.passed and second.summary.gate_failures
    compared = assay.compare(first.run_id, second.run_id, store=store)
    assert not compared.verdict.regression_detected and compared.exit_code() == 1
    assert compared.headline().startswith("no regression, but the candidate failed its own")
    assert compared.exit_code(fail_on_thresholds=False) == 0
    shown = CliRunner().invoke(cli_app, ["compare", first.run_id, second.run_id,
                                         "--store", store])
    assert shown.exit_code == 1, shown.output
    assert "candidate's own gates failed: " in shown.output
    assert shown.output.strip().splitlines()[-1].startswith("no regression, but")
    with serve(store) as served, served.client() as client:
        answer = client.get("/runs/compare", params={"baseline_run_id": first.run_id,
                                                     "candidate_run_id": second.run_id}).json()
    assert answer["exit_status"] == 1 and answer["headline_text"].startswith("no regression, but")


def test_a_counted_reason_whose_test_is_not_significant_says_it_may_be_noise(tmp_path):
    """By AgentV's and Connexity's rule a reason counts by its threshold alone, so one case
    of twenty that flipped is "regression detected"; every surface that lists the reasons
    says what the paired test found (the terminal printed only "p=1.0000", the Markdown of a
    pull-request comment not even that), and with --require-significance it is not counted."""
    from assay.report.comparison import comparison_markdown, reason_rows
    from assay.report.markdown import md_text

    url = f"sqlite:///{tmp_path}/runs.db"
    base, cand = _one_of_twenty_worse(url)
    compared = assay.compare(base.run_id, cand.run_id, store=url)
    assert compared.verdict.regression_detected
    [passed] = [r for r in reason_rows(compared) if r.text.startswith("pass rate dropped")]
    assert passed.significance == "p=1.0000, not significant at 0.05: it may be noise"
    markdown = comparison_markdown(compared)
    assert f"- {md_text(passed.text)} ({md_text(passed.significance)})" in markdown
    shown = CliRunner().invoke(cli_app, ["compare", base.run_id, cand.run_id, "--store", url],
                               env={"COLUMNS": "300"})
    assert shown.exit_code == 1
    assert "not significant at 0.05: it may be noise" in shown.output
    strict = CliRunner().invoke(cli_app, ["compare", base.run_id, cand.run_id, "--store", url,
                                          "--require-significance", "0.05",
                                          "--no-fail-on-thresholds"],
                                env={"COLUMNS": "300"})
    assert strict.exit_code == 0, strict.output
    assert "not significant at 0.05: not counted" in strict.output


def _one_of_twenty_worse(url: str) -> tuple[Any, Any]:
    """Two stored runs of twenty cases by ``exact_match``: the second answers one wrongly."""
    rows = _rows(20)
    answers = {r["id"]: r["expected_output"] for r in rows}
    base = assay.evaluate(rows, target=lambda q: answers_for(q, rows, answers),
                          evaluators=["exact_match"], store=url)
    answers[rows[0]["id"]] = "something else"
    cand = assay.evaluate(rows, target=lambda q: answers_for(q, rows, answers),
                          evaluators=["exact_match"], store=url)
    return base, cand


def answers_for(question: str, rows: list[dict[str, Any]], answers: dict[str, str]) -> str:
    return next(answers[r["id"]] for r in rows if r["input"] == question)


def test_no_regression_beside_a_case_that_got_worse_says_why(tmp_path):
    """A case that got worse is not a regression unless the policy's rule counts it on the
    runs' figures; the headline said "no regression (1 case(s) regressed, ...)", which read
    as a contradiction. Every surface now says why it is not counted: its test was not
    significant, or the figures stayed within the thresholds."""
    from assay.report.comparison import comparison_markdown
    from assay.report.markdown import md_text

    url = f"sqlite:///{tmp_path}/runs.db"
    base, cand = _one_of_twenty_worse(url)
    noise = ("no regression by the default policy's rule: 1 case got worse, not enough to "
             "count (not significant at 0.05: pass rate dropped 5.0 pt (100.0% → 95.0%)) "
             "(1 case(s) regressed, 0 improved, 19 unchanged, 0 error(s))")
    strict = assay.compare(base.run_id, cand.run_id, store=url, require_significance=0.05)
    assert strict.headline(fail_on_thresholds=False) == noise
    assert comparison_markdown(strict, fail_on_thresholds=False).startswith(
        f"### {md_text(noise)}\n")
    shown = CliRunner().invoke(cli_app, ["compare", base.run_id, cand.run_id, "--store", url,
                                         "--require-significance", "0.05",
                                         "--no-fail-on-thresholds"], env={"COLUMNS": "400"})
    assert shown.exit_code == 0 and shown.output.strip().splitlines()[-1] == noise
    gated = CliRunner().invoke(cli_app, ["compare", base.run_id, cand.run_id, "--store", url,
                                         "--require-significance", "0.05"],
                               env={"COLUMNS": "400"})
    assert gated.exit_code == 1
    assert gated.output.strip().splitlines()[-1].endswith(
        "; but the candidate failed its own gates (1 case(s) regressed, 0 improved, "
        "19 unchanged, 0 error(s))")
    loose = ["--max-pass-rate-drop", "0.1", "--max-avg-score-drop", "10"]
    within = CliRunner().invoke(cli_app, ["compare", base.run_id, cand.run_id, "--store", url,
                                          "--json", "--no-fail-on-thresholds", *loose])
    assert json.loads(within.output)["headline"] == (
        "no regression by the default policy's rule: 1 case got worse, not enough to count "
        "(the runs' figures stayed within the thresholds) (1 case(s) regressed, 0 improved, "
        "19 unchanged, 0 error(s))")
    with serve(url) as served, served.client() as client:
        answer = client.get("/runs/compare", params={
            "baseline_run_id": base.run_id, "candidate_run_id": cand.run_id,
            "require_significance": 0.05}).json()
    assert answer["headline_text"].startswith(noise.split(" (1 case(s)")[0] + "; but the")
