"""Acceptance tests C-16 to C-23, B-01 and B-03: comparing two stored runs, through the CLI
(every exit code) and as library functions.

Where assay chose otherwise than the specification (docs/connexity.md says why): reasons are
worded by the one number formatter (``pass rate dropped 5.0 pt (100.0% → 95.0%)``); runs that
differ in their cases, evaluators or judge are refused unless the difference is allowed (the
specification flags them and compares); latency regresses only above the noise and a 50 ms
floor too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.analysis.compare import (
    CompareThresholds,
    RunFigures,
    RunNotCompleted,
    RunNotFound,
    case_status,
    metric_aggregate_deltas,
    metric_deltas,
    verdict,
)
from assay.analysis.diff import prompt_diff
from assay.run.policies.base import parse_fraction
from assay.store.runs import RunStore
from tests.acceptance.connexity.harness import HERE, cli, has, run
from tests.acceptance.connexity.stub_tables import answer, same


def compare(store: str, *args: str) -> tuple[int, dict[str, Any] | None, str]:
    code, out = cli("compare", *args, "--store", store, "--json")
    try:
        return code, json.loads(out), out
    except ValueError:
        return code, None, out


@pytest.fixture
def worked(stub, store) -> tuple[str, str]:
    """The runs of C-16: compare_base.yaml and compare_cand.yaml."""
    base = run(store, HERE / "compare_base.yaml")[2]
    cand = run(store, HERE / "compare_cand.yaml")[2]
    return base, cand


def test_c16_the_worked_example(worked, store):
    base, cand = worked
    code, result, out = compare(store, base, cand)
    assert code == 1, out
    assert result is not None
    assert (result["baseline"]["pass_rate"], result["candidate"]["pass_rate"]) == (0.75, 0.75)
    aggregate = result["aggregate"]
    assert aggregate["pass_rate_delta"] == 0.0
    assert (result["baseline"]["avg_score"], result["candidate"]["avg_score"]) == (78.75, 80.0)
    assert aggregate["avg_score_delta"] == 1.25
    assert aggregate["latency_avg_delta_ms"] == 250.0
    assert result["verdict"]["regression_detected"] is True
    assert result["verdict"]["reasons"] == ["average latency rose 25.0% (1000 ms → 1250 ms)"]
    cases = {c["test_case_id"]: c for c in result["test_case_comparisons"]}
    assert {k: (c["status"], c["score_delta"]) for k, c in cases.items()} == {
        "A": ("regression", -6.0), "B": ("regression", -2.0), "C": ("improvement", 10.0),
        "D": ("unchanged", 3.0)}
    assert (aggregate["total_regressions"], aggregate["total_improvements"],
            aggregate["total_unchanged"], aggregate["total_errors"]) == (2, 1, 1, 0)
    metrics = {m["metric"]: m for m in aggregate["per_metric_aggregate_deltas"]}
    assert (metrics["tool_routing"]["baseline"], metrics["tool_routing"]["candidate"],
            metrics["tool_routing"]["delta"]) == (3.0, 1.25, -1.75)
    assert (metrics["information_gathering"]["baseline"],
            metrics["information_gathering"]["candidate"],
            metrics["information_gathering"]["delta"]) == (3.0, 3.75, 0.75)
    gates = result["candidate_gates"]
    assert (gates["metrics_passed"], gates["cases_passed"]) == (True, False)


def test_c16_exit_codes(worked, store):
    base, cand = worked
    code, result, out = compare(store, base, cand, "--max-latency-increase-pct", "0.3")
    assert result is not None and result["verdict"]["regression_detected"] is False
    assert code == 1  # the candidate fails its own cases dimension
    # ...and the printed verdict says so: never "no regression" beside exit code 1.
    code, out = cli("compare", base, cand, "--store", store, "--max-latency-increase-pct",
                    "0.3")
    assert code == 1, out
    verdict = out.strip().splitlines()[-1]
    # A and B got worse, but within the latency threshold given the runs' figures are no
    # regression by Connexity's rule; the line says so rather than "no regression" alone.
    assert verdict.startswith("no regression by the connexity policy's rule: 2 cases got "
                              "worse, not enough to count (the runs' figures stayed within "
                              "the thresholds); but the candidate failed its own gates"), out
    code, out = cli("compare", base, cand, "--store", store, "--max-latency-increase-pct",
                    "0.3", "--no-fail-on-thresholds")
    assert code == 0 and out.strip().splitlines()[-1].startswith("no regression"), out
    code, result, out = compare(store, base, cand, "--max-latency-increase-pct", "30%",
                                "--no-fail-on-thresholds")
    assert code == 0, out
    assert result is not None
    assert result["verdict"]["thresholds_used"]["max_latency_increase_pct"] == 0.3
    code, out = cli("compare", base, cand, "--store", store)
    assert code == 1 and has(out, "regression detected", "average latency rose 25.0%")
    code, out = cli("compare", base, cand, "--store", store, "--max-latency-increase-pct",
                    "a lot")
    assert code == 2 and has(out, "is not a fraction")


def test_c17_verdict_boundaries():
    def agg(**values: float | None) -> RunFigures:
        return RunFigures(**{"pass_rate": 1.0, "avg_score": 80.0, "latency_avg_ms": 1000.0,
                             **values})

    assert verdict(agg(), agg(avg_score=75.0)).reasons == []
    late = verdict(agg(), agg(avg_score=74.99))
    assert late.reasons == ["average score dropped 5.0 pt (80.0 /100 → 75.0 /100)"]
    assert verdict(agg(), agg(latency_avg_ms=1200.0)).reasons == []
    assert verdict(agg(), agg(latency_avg_ms=1201.0)).reasons == [
        "average latency rose 20.1% (1000 ms → 1201 ms)"]
    # under the 50 ms floor, however large the share: never a regression
    assert verdict(agg(latency_avg_ms=10.0), agg(latency_avg_ms=40.0)).reasons == []
    assert verdict(agg(latency_avg_ms=0.0), agg(latency_avg_ms=5000.0)).reasons == []
    assert verdict(agg(latency_avg_ms=None), agg(latency_avg_ms=5000.0)).reasons == []
    assert verdict(agg(pass_rate=0.75), agg(pass_rate=0.70)).reasons == [
        "pass rate dropped 5.0 pt (75.0% → 70.0%)"]
    assert verdict(agg(), agg()).thresholds_used == {
        "max_pass_rate_drop": 0.0, "max_avg_score_drop": 5.0, "max_latency_increase_pct": 0.2,
        "latency_floor_ms": 50.0}
    assert case_status(None, None, 80.0, 75.0) == ("unchanged", -5.0)
    assert case_status(None, None, 75.0, 80.0) == ("unchanged", 5.0)
    assert case_status(None, None, 80.0, 74.99) == ("regression", -5.01)
    assert case_status(None, None, 74.99, 80.0) == ("improvement", 5.01)
    assert case_status(None, None, 80.0, 79.996)[1] == -0.0  # rounded to 2 places
    assert parse_fraction("20%") == 0.2 and parse_fraction("0.2") == 0.2


def _suite(tmp_path: Path, name: str, cases: list[tuple[str, str | None]],
           outcomes: dict[str, list[str]] | None = None, agent: str = "") -> Path:
    """A suite named ``compared`` of one-shot cases (id, stub marker of the output, None for
    no output: the target fails), each taking 100 ms."""
    lines = []
    for case_id, marker in cases:
        output = f', output: "{marker} answer"' if marker else ""
        extra = f", expected_outcomes: {json.dumps(outcomes[case_id])}" \
            if outcomes and case_id in outcomes else ""
        lines.append(f'  - {{id: {case_id}, input: "q {case_id}"{extra}, metadata: '
                     f'{{latency_ms: 100{output}}}}}')
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: compared\nscoring: connexity\n{agent}execution:\n  evaluators:\n"
                    '    - {type: connexity_judge, model: "custom:stub"}\n'
                    "evalcases:\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_c18_errors_in_compare(stub, store, tmp_path):
    stub.table["⟦E80⟧"] = answer(same(4))
    base = run(store, _suite(tmp_path, "base", [("E1", "⟦E80⟧"), ("E2", "⟦E80⟧")]))[2]
    cand = run(store, _suite(tmp_path, "cand", [("E1", "⟦E80⟧"), ("E2", None)]))[2]
    code, result, _out = compare(store, base, cand)
    assert result is not None
    cases = {c["test_case_id"]: c["status"] for c in result["test_case_comparisons"]}
    assert cases == {"E1": "unchanged", "E2": "error"}
    assert result["aggregate"]["total_errors"] == 1
    assert (result["baseline"]["pass_rate"], result["candidate"]["pass_rate"]) == (1.0, 0.5)
    assert result["verdict"]["reasons"] == ["pass rate dropped 50.0 pt (100.0% → 50.0%)"]
    assert result["verdict"]["regression_detected"] is True and code == 1
    assert (result["baseline"]["avg_score"], result["candidate"]["avg_score"]) == (80.0, 80.0)


def test_c19_case_set_drift(stub, store, tmp_path):
    # 80 passes and 70 fails (below 75): the average moves by (80 - 70) / 3 < 5 points.
    stub.table.update({"⟦PASS⟧": answer(same(4)), "⟦FAIL⟧": answer([0, 0, 5, 5, 5, 5, 5, 5])})
    base = run(store, _suite(tmp_path, "base", [("A", "⟦PASS⟧"), ("B", "⟦PASS⟧"),
                                                 ("C", "⟦FAIL⟧")]))[2]
    cand = run(store, _suite(tmp_path, "cand", [("B", "⟦PASS⟧"), ("C", "⟦FAIL⟧"),
                                                 ("D", "⟦FAIL⟧")]))[2]
    code, refused, out = compare(store, base, cand)
    assert code == 2 and refused is None and has(out, "--allow-different-cases")
    _, result, _ = compare(store, base, cand, "--allow-different-cases")
    assert result is not None
    assert result["baseline_only_test_cases"] == ["A"]
    assert result["candidate_only_test_cases"] == ["D"]
    assert any("1 removed, 1 added" in w for w in result["warnings"])
    assert round(result["baseline"]["pass_rate"], 4) == 0.6667
    assert round(result["candidate"]["pass_rate"], 4) == 0.3333
    assert result["aggregate"]["pass_rate_delta"] == -0.3333
    assert result["verdict"]["reasons"] == ["pass rate dropped 33.3 pt (66.7% → 33.3%)"]
    _, result, _ = compare(store, base, cand, "--matched-only", "--allow-different-cases")
    assert result is not None
    assert (result["baseline"]["pass_rate"], result["candidate"]["pass_rate"]) == (0.5, 0.5)
    assert result["verdict"]["reasons"] == []
    _code, result, _out = compare(store, base, cand, "--matched-only", "--missing-is-regression",
                                  "--allow-different-cases")
    assert result is not None
    assert result["verdict"]["reasons"] == ["1 baseline case(s) missing from the candidate"]


def test_c20_metric_deltas():
    deltas = {d.metric: d for d in metric_deltas(
        {"task_completion": (5.0, True), "a": (4.0, False), "b": (2.0, False),
         "c": (3.0, False), "only_base": (1.0, False)},
        {"task_completion": (0.0, True), "a": (2.0, False), "b": (4.0, False),
         "c": (3.0, False)})}
    assert (deltas["task_completion"].status, deltas["task_completion"].delta) == \
        ("regression", None)
    assert (deltas["a"].status, deltas["a"].delta) == ("regression", -2.0)
    assert deltas["b"].status == "improvement" and deltas["c"].status == "unchanged"
    assert deltas["only_base"].status == "unchanged"
    assert deltas["only_base"].candidate_score is None
    scored = metric_aggregate_deltas([{"m": (3.0, False)}, {"m": (4.0, False)}],
                                     [{"m": (4.0, False)}, {"m": (5.0, False)}])[0]
    assert (scored.baseline, scored.candidate, scored.delta) == (3.5, 4.5, 1.0)
    binary = metric_aggregate_deltas([{"t": (5.0, True)}, {"t": (5.0, True)}],
                                     [{"t": (5.0, True)}, {"t": (0.0, True)}])[0]
    assert (binary.baseline, binary.candidate, binary.delta) == (1.0, 0.5, -0.5)


def test_c21_the_library_function_behind_the_endpoint(worked, store):
    base, cand = worked
    result = assay.compare(base, cand, store=store,
                           thresholds={"max_latency_increase_pct": 0.3})
    assert result.verdict.thresholds_used == {
        "max_pass_rate_drop": 0.0, "max_avg_score_drop": 5.0, "max_latency_increase_pct": 0.3,
        "latency_floor_ms": 50.0}
    assert result.verdict.regression_detected is False
    with pytest.raises(RunNotFound) as missing:
        assay.compare("no-such-run", cand, store=store)
    assert (missing.value.status_code, missing.value.detail) == (404, "Baseline run not found")
    RunStore(store).set_status(cand, "interrupted")
    with pytest.raises(RunNotCompleted) as stopped:
        assay.compare(base, cand, store=store)
    assert stopped.value.status_code == 400
    assert stopped.value.detail == "Candidate run is not completed (status: interrupted)"
    code, out = cli("compare", base, cand, "--store", store)
    assert code == 2 and has(out, "Candidate run is not completed (status: interrupted)")
    code, out = cli("compare", "no-such-run", cand, "--store", store)
    assert code == 2
    code, out = cli("compare", base, cand, "--store", store, "--allow-incomplete", "--json")
    assert code in (0, 1) and json.loads(out)["candidate_run_id"] == cand
    with pytest.raises(assay.ConfigError):
        assay.compare(base, base, store=store, thresholds={"max_avg_score_drop": -1})


def test_c22_baselines(stub, store):
    r1 = run(store, HERE / "compare_base.yaml")[2]
    r2 = run(store, HERE / "compare_base.yaml")[2]
    r3 = run(store, HERE / "compare_base.yaml")[2]
    RunStore(store).set_status(r3, "interrupted")
    r4 = run(store, HERE / "compare_cand.yaml")[2]
    assert cli("baseline", "set", r1, "--store", store)[0] == 0
    code, out = cli("baseline", "set", r2, "--store", store)
    assert code == 0
    code, out = cli("baseline", "show", "--store", store, "--json")
    shown = json.loads(out)
    assert [b["run_id"] for b in shown] == [r2]  # one baseline per suite and target
    code, out = cli("baseline", "set", r3, "--store", store)
    assert code == 2
    assert has(out, "Only completed runs can be marked as baseline (status=interrupted)")
    code, result, out = compare(store, "--against-baseline", r4)
    assert result is not None and result["baseline_run_id"] == r2, out
    assert result["candidate_run_id"] == r4
    code, out = cli("compare", r1, r4, "--against-baseline", "--store", store)
    assert code == 2 and has(out, "give only the candidate run")
    assert cli("baseline", "clear", r2, "--store", store)[0] == 0
    code, out = cli("compare", "--against-baseline", r4, "--store", store)
    assert code == 2 and has(out, "has no baseline")


def test_run_compare_to_baseline_and_set_baseline(stub, store):
    lenient = ("--cases-pass-threshold", "0", "--metrics-pass-threshold", "0")
    code, out, first = run(store, HERE / "compare_base.yaml", "--set-baseline", *lenient)
    assert code == 0 and has(out, "baseline set"), out
    code, out, _second = run(store, HERE / "compare_cand.yaml", "--compare-to-baseline",
                            *lenient)
    assert code == 1 and has(out, "average latency rose 25.0%", "regression detected"), out
    code, out, _third = run(store, HERE / "compare_cand.yaml", "--set-baseline")
    assert code == 1 and has(out, "baseline not set"), out  # it failed its gates
    code, out = cli("baseline", "show", first, "--store", store, "--json")
    assert json.loads(out)[0]["run_id"] == first


def test_c23_config_diff(stub, store, tmp_path):
    stub.table["⟦PASS⟧"] = answer(same(5))
    before = _suite(tmp_path, "before", [("A", "⟦PASS⟧")],
                    agent='agent:\n  system_prompt: "A\\nB\\nC\\nD\\n"\n')
    after = _suite(tmp_path, "after", [("A", "⟦PASS⟧")],
                   agent='agent:\n  system_prompt: "A\\nX\\nC\\nD\\n"\n')
    base = run(store, before)[2]
    cand = run(store, after, "--judge-model", "custom:stub2")[2]
    _code, result, _out = compare(store, base, cand, "--allow-different-judge")
    assert result is not None
    diff = result["config_diff"]
    prompt = diff["prompt_diff"]
    assert (prompt["changed"], prompt["added_line_count"], prompt["removed_line_count"],
            prompt["change_ratio"]) == (True, 1, 1, 0.5)
    assert diff["judge_model_changed"] == {"field": "judge.model", "old_value": "custom:stub",
                                           "new_value": "custom:stub2"}
    same_prompt = prompt_diff("A\nB\n", "A\nB\n")
    assert (same_prompt.changed, same_prompt.change_ratio) == (False, 0.0)


def _twenty(tmp_path: Path, name: str, flip: bool) -> Path:
    cases = [(f"c{i:02d}", "⟦B01-flip⟧" if flip and i == 7 else "⟦B01⟧")
             for i in range(1, 21)]
    return _suite(tmp_path, name, cases, {"c07": ["The agent answers"]})


def test_b01_significance_does_not_change_the_verdict_unless_required(stub, store, tmp_path):
    stub.table.update({"⟦B01⟧": answer(same(5), [True]),
                       "⟦B01-flip⟧": answer(same(5), [False])})
    base = run(store, _twenty(tmp_path, "base", flip=False))[2]
    cand = run(store, _twenty(tmp_path, "cand", flip=True))[2]
    code, result, _ = compare(store, base, cand, "--no-fail-on-thresholds")
    assert result is not None
    assert result["verdict"]["regression_detected"] is True
    assert result["verdict"]["reasons"] == ["pass rate dropped 5.0 pt (100.0% → 95.0%)"]
    cases = result["significance"]["cases"]
    assert {k: cases[k] for k in ("method", "regressed", "improved", "p_value")} == {
        "method": "mcnemar_exact", "regressed": 1, "improved": 0, "p_value": 1.0}
    assert cases["significant"] is False
    assert code == 1
    code, result, _out = compare(store, base, cand, "--no-fail-on-thresholds",
                                "--require-significance", "0.05")
    assert result is not None
    assert result["verdict"]["reasons"] == []  # kept in reason_details, not counted
    assert result["verdict"]["reason_details"][0]["text"] == \
        "pass rate dropped 5.0 pt (100.0% → 95.0%)"
    assert result["verdict"]["reason_details"][0]["tag"] == "not_significant"
    assert result["verdict"]["regression_detected"] is False
    assert code == 0


def test_b03_comparability_guard(stub, store):
    base = run(store, HERE / "compare_base.yaml")[2]
    cand = run(store, HERE / "compare_base.yaml", "--judge-model", "custom:stub2")[2]
    code, result, out = compare(store, base, cand, "--no-fail-on-thresholds")
    assert code == 2 and result is None  # another ruler: refused unless allowed
    assert has(out, "judge model changed (judge.model: custom:stub → custom:stub2)",
               "--allow-different-judge")
    code, result, out = compare(store, base, cand, "--no-fail-on-thresholds",
                                "--allow-different-judge")
    assert result is not None
    assert result["comparable"] is False
    assert "judge model changed (judge.model: custom:stub → custom:stub2) (allowed)" in \
        result["warnings"]
    assert result["verdict"]["regression_detected"] is False and code == 0


def test_compare_thresholds_validate():
    with pytest.raises(ValueError):
        CompareThresholds(max_pass_rate_drop=-0.1)
    assert CompareThresholds(max_latency_increase_pct="20%").max_latency_increase_pct == 0.2


def test_the_policy_follows_the_runs_scoring_and_the_flags(stub, store):
    base = run(store, HERE / "compare_base.yaml", "--scoring", "default")[2]
    cand = run(store, HERE / "compare_cand.yaml", "--scoring", "default")[2]
    code, result, out = compare(store, base, cand)
    assert result is not None and result["policy"] == "default"  # the runs' own policy
    code, result, out = compare(store, base, cand, "--max-avg-score-drop", "3")
    assert result is not None and result["verdict"]["thresholds_used"][
        "max_avg_score_drop"] == 3.0
    connexity = run(store, HERE / "compare_cand.yaml")[2]
    code, result, out = compare(store, base, connexity)
    assert code == 2 and has(out, "scoring changed (default → connexity)")


def test_repeats_are_compared_by_mean_score_and_pass_all_not_by_index(stub, store, tmp_path):
    from assay.targets.callable import load_function

    agent = load_function("agents.py:repeat_marker", HERE.parent)
    stub.table.update({"⟦K-r0⟧": answer(same(5)), "⟦K-r1⟧": answer(same(4)),
                       "⟦N-r0⟧": answer(same(3)), "⟦N-r1⟧": answer(same(5))})
    base_suite = tmp_path / "base.yaml"
    base_suite.write_text('name: reps\nscoring: connexity\nexecution:\n  evaluators:\n'
                          '    - {type: connexity_judge, model: "custom:stub"}\n'
                          'evalcases:\n  - {id: X, input: "⟦K⟧ q"}\n', encoding="utf-8")
    cand_suite = tmp_path / "cand.yaml"
    cand_suite.write_text(base_suite.read_text().replace("⟦K⟧", "⟦N⟧"), encoding="utf-8")
    base = assay.evaluate(base_suite, target=agent, repeat=2, store=store, cache="off")
    cand = assay.evaluate(cand_suite, target=agent, repeat=2, store=store, cache="off")
    result = assay.compare(base.run_id, cand.run_id, store=store)
    case = result.test_case_comparisons[0]
    assert (case.baseline_executions, case.candidate_executions) == (2, 2)
    assert (case.baseline_passed, case.candidate_passed) == (True, False)  # pass^k
    assert (case.baseline_pass_fraction, case.candidate_pass_fraction) == (1.0, 0.5)
    assert (case.baseline_score, case.candidate_score) == (90.0, 80.0)  # means, 100|80 vs 60|100
    assert case.status == "regression"


def test_the_config_diff_names_changed_target_settings():
    from assay.analysis.diff import config_diff
    from assay.types.records import RunSnapshot

    old = RunSnapshot(targets={"bot": {"provider": "python", "prompt": "careful",
                                       "params": {"temperature": 0}}})
    new = RunSnapshot(targets={"bot": {"provider": "python", "prompt": "fast",
                                       "params": {"temperature": 0}}, "other": {}})
    changes = config_diff(old, new, set(), set()).target_config_changes
    assert [(c.field, c.old_value, c.new_value) for c in changes] == [
        ("targets.bot.prompt", "careful", "fast"), ("targets.other", None, {})]
    assert config_diff(old, old, set(), set()).target_config_changes == []
