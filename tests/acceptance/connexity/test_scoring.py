"""Acceptance tests C-01 to C-10: the multi-metric judge's per-case score and gate."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.acceptance.connexity.harness import HERE, cli, has, judge_record, run

SCORING = HERE / "scoring.yaml"
DEFAULT_WEIGHTS = [0.15, 0.15, 0.15, 0.125, 0.125, 0.1, 0.1, 0.1]


def _case(stub, store, case_id: str):
    _code, _out, run_id = run(store, SCORING, "--filter", case_id)
    return judge_record(store, run_id, case_id)


def test_c01_default_formula(stub, store):
    record, score = _case(stub, store, "C01")
    details = score.details
    assert details["overall_score"] == 77.5
    assert record.overall_score == 77.5 and score.raw == 77.5 and score.value == 0.775
    assert [m["label"] for m in details["metric_scores"]] == [
        "excellent", "good", "acceptable", "excellent", "poor", "good", "acceptable",
        "excellent"]
    assert all(abs(m["weight"] - w) <= 1e-12
               for m, w in zip(details["metric_scores"], DEFAULT_WEIGHTS, strict=True))
    assert score.passed is True and record.verdict.value == "pass"
    assert details["gate"] == "score_fallback"
    assert stub.calls["⟦C01⟧"] == 1 and stub.total == 1


@pytest.mark.parametrize(("case_id", "overall", "passed"), [
    ("C02a", 60.0, False), ("C02b", 100.0, True), ("C02c", 0.0, False)])
def test_c02_anchors(stub, store, case_id, overall, passed):
    _record, score = _case(stub, store, case_id)
    assert score.details["overall_score"] == overall  # 100.0 exactly, though Σw < 1 in floats
    assert score.passed is passed
    if case_id == "C02c":
        assert {m["label"] for m in score.details["metric_scores"]} == {"critical_fail"}


def test_c03_a_zero_does_not_fail_the_case(stub, store):
    record, score = _case(stub, store, "C03")
    assert score.details["overall_score"] == 87.5
    ic = next(m for m in score.details["metric_scores"]
              if m["metric"] == "instruction_compliance")
    assert ic["label"] == "critical_fail" and ic["failure_code"] == "stub_issue"
    assert score.passed is True and record.verdict.value == "pass"


def test_c04_override_renormalise_binary_and_the_outcome_gate(stub, store):
    record, score = _case(stub, store, "C04")
    metrics = {m["metric"]: m for m in score.details["metric_scores"]}
    assert [round(metrics[m]["weight"], 12) for m in
            ("tool_routing", "response_delivery", "task_completion")] == [0.6, 0.2, 0.2]
    assert score.details["overall_score"] == 56.0
    task = metrics["task_completion"]
    assert (task["score"], task["label"], task["is_binary"]) == (0, "fail", True)
    assert score.passed is True and record.verdict.value == "pass"  # although 56 < 75
    assert score.details["gate"] == "expected_outcomes"


def test_c05_rounding(stub, store):
    _code, _out, run_id = run(store, SCORING, "--filter", "C05*")
    assert judge_record(store, run_id, "C05a")[1].details["overall_score"] == 86.67
    assert judge_record(store, run_id, "C05b")[1].details["overall_score"] == 33.33


def test_c06_the_fallback_gate_is_inclusive(stub, store):
    _code, _out, run_id = run(store, SCORING, "--filter", "C06*")
    at, above = judge_record(store, run_id, "C06a")[1], judge_record(store, run_id, "C06b")[1]
    assert at.details["overall_score"] == above.details["overall_score"] == 77.5
    assert at.passed is True  # 77.5 >= 77.5
    assert above.passed is False  # 77.5 < 77.51


def test_c07_an_outcome_failure_beats_a_perfect_score(stub, store):
    record, score = _case(stub, store, "C07")
    assert score.details["overall_score"] == 100.0
    assert score.passed is False and record.verdict.value == "fail"
    results = score.details["expected_outcome_results"]
    assert [r["statement"] for r in results] == record.case.expected_outcomes
    assert [r["passed"] for r in results] == [True, False, True]


@pytest.mark.parametrize("scoring", ["", "scoring: databricks\n"])
def test_c07_the_judges_gate_fails_its_case_under_every_scoring(stub, store, tmp_path,
                                                                scoring):
    # Without `scoring: connexity` the case verdict is another policy's (the band of the
    # case's mean, or the checks the Databricks policy reads): a 100 with an expected outcome
    # not met must still fail, as must a score under the threshold.
    suite = tmp_path / "other.yaml"
    suite.write_text(SCORING.read_text(encoding="utf-8").replace("scoring: connexity\n",
                                                                 scoring), encoding="utf-8")
    code, out, run_id = run(store, suite, "--filter", "C0[27]*")
    assert code == 1, out
    record, score = judge_record(store, run_id, "C07")
    assert score.value == 1.0 and score.passed is False and score.blocking
    assert record.verdict.value == "fail"
    record, score = judge_record(store, run_id, "C02a")  # 60 < 75: banded borderline before
    assert score.value == 0.6 and score.blocking and record.verdict.value == "fail"
    record, score = judge_record(store, run_id, "C02b")
    assert not score.blocking and record.verdict.value == "pass"


def test_c08_a_partial_outcome_list_is_rejected(stub, store):
    _code, _out, run_id = run(store, SCORING, "--filter", "C08*")
    for case_id in ("C08", "C08b"):
        record, score = judge_record(store, run_id, case_id)
        assert score.error.code == "judge_output_invalid"
        assert record.overall_score is None and record.verdict.value == "error"
    assert stub.calls["⟦C08⟧"] == 3 and stub.calls["⟦C08b⟧"] == 3  # 1 ask + 2 re-asks
    from tests.acceptance.connexity.harness import summary

    figures = summary(store, run_id)
    assert figures["error_count"] == 2 and figures["passed_count"] == 0
    assert figures["weighted_metrics_score_pct"] is None  # errors are not in the mean


BAD_METRICS = {
    "metric: tool_routng": ("[{metric: tool_routng}]", "Unknown metric: tool_routng"),
    "task_completion without weight": (
        "[{metric: tool_routing}, {metric: task_completion}]",
        "task_completion requires an explicit weight when selected"),
    "weight -1": ("[{metric: tool_routing, weight: -1}]",
                  "Negative weight for metric tool_routing"),
    "all weights 0": ("[{metric: tool_routing, weight: 0}, {metric: response_delivery, "
                      "weight: 0}]", "Metric weights must sum to a positive value"),
}


def _suite(tmp_path: Path, metrics: str) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(f"""\
        scoring: connexity
        execution:
          evaluators:
            - {{type: connexity_judge, model: "custom:stub", metrics: {metrics}}}
        evalcases:
          - {{id: C01, input: "⟦C01⟧ Where is order A-17?", metadata: {{output: "It shipped."}}}}
        """), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", list(BAD_METRICS))
def test_c09_metric_selection_errors_before_any_call(stub, store, tmp_path, name):
    metrics, message = BAD_METRICS[name]
    suite = _suite(tmp_path, metrics)
    code, out = cli("validate", str(suite))
    assert code == 2 and has(out, message), out
    assert has(out, f"{suite}:4:")  # located at the evaluator's metrics
    code, out = cli("run", str(suite), "--store", store, "--cache", "off")
    assert code == 2 and has(out, message), out
    assert stub.total == 0


def test_c09_empty_metrics_means_the_eight_defaults(stub, store, tmp_path):
    _code, _out, run_id = run(store, _suite(tmp_path, "[]"))
    _record, score = judge_record(store, run_id, "C01")
    assert len(score.details["metric_scores"]) == 8
    assert score.details["overall_score"] == 77.5


def test_c10_a_judge_failure_is_not_a_zero(stub, store):
    record, score = _case(stub, store, "C10")
    assert score.error.code == "judge_output_invalid"
    assert score.details["raw_output"] == "I cannot answer that in JSON, sorry."
    assert record.verdict.value == "error" and record.overall_score is None
    assert record.score is None


def test_c10_connexity_compat_scores_a_judge_failure_zero(stub, store):
    _code, _out, run_id = run(store, SCORING, "--filter", "C10", "--connexity-compat")
    record, score = judge_record(store, run_id, "C10")
    assert score.error.code == "judge_output_invalid"  # the score itself stays honest
    assert record.overall_score == 0.0 and record.verdict.value == "fail"
    from tests.acceptance.connexity.harness import summary

    figures = summary(store, run_id)
    assert (figures["failed_count"], figures["error_count"]) == (1, 0)
    assert figures["weighted_metrics_score_pct"] == 0.0


def _objects(schema: object) -> list[dict[str, object]]:
    """Every object schema inside a JSON schema."""
    if isinstance(schema, list):
        return [o for item in schema for o in _objects(item)]
    if not isinstance(schema, dict):
        return []
    found = [schema] if schema.get("type") == "object" else []
    return found + [o for value in schema.values() for o in _objects(value)]


def test_the_judge_asks_with_a_strict_schema_and_keeps_its_request_and_answer(stub, store):
    run_id = run(store, SCORING, "--filter", "C04")[2]
    _, score = judge_record(store, run_id, "C04")
    assert score.error is None and score.raw == 56.0
    request = stub.requests[-1]
    asked = request["response_format"]["json_schema"]
    assert asked["name"] == "judge_metric_scores" and asked["strict"] is True
    objects = _objects(asked["schema"])
    assert len(objects) == 4  # the answer; a scored, a binary metric and an outcome result
    for obj in objects:  # strict form: every property required, no other, no defaults
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])
    assert '"default"' not in json.dumps(asked["schema"])
    # a successful judgement keeps what the judge was sent and what it answered, as the
    # viewer's case page reads them (details.judge_request, details.judge_answer)
    sent = score.details["judge_request"]
    assert [m["role"] for m in sent] == ["system", "user"]
    assert sent[1]["content"] == request["messages"][-1]["content"]
    assert json.loads(score.details["judge_answer"])["tool_routing"]["score"] == 4
