"""Acceptance tests D-01 to D-19 of the Databricks / MLflow family.

Every judge answer comes from the stub judge (``custom:stub``, tests/acceptance/stub.py), the
cache is off, and the numbers and call counts are the specification's, exactly.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Literal

import pytest

import assay
from assay.analysis.significance import paired_compare
from assay.errors import ConfigError, EvaluationError
from assay.integrations.mlflow_scorers import Correctness, Guidelines, Safety
from assay.judges.agent.custom import make_judge
from assay.judges.feedback import Feedback
from assay.store.runs import RunStore
from tests.acceptance.stub import StubJudge

DATA = Path(__file__).parent / "databricks"
CLAIM = re.compile(r"<claim_([0-9a-f]+)>\n(.*?)\n</claim_\1>", re.S)
QUESTION = re.compile(r"<question_([0-9a-f]+)>\n(.*?)\n</question_\1>", re.S)


def judge(table: dict[Any, Any]) -> StubJudge:
    stub = StubJudge(table)
    assay.register_service("stub", stub)
    return stub


def evaluate(data: Any, **options: Any) -> assay.EvaluationResult:
    options.setdefault("judge_model", "custom:stub")
    return assay.evaluate(data, cache="off", **options)


def by_id(result: assay.EvaluationResult) -> dict[str, dict[str, Any]]:
    return {row["request_id"]: row for row in result.rows()}


def close(value: Any, expected: float) -> bool:
    return value is not None and abs(value - expected) <= 1e-9


# -- D-01 ----------------------------------------------------------------------------------


def test_d01_percentage_errors_and_missing_inputs(tmp_path: Path) -> None:
    stub = judge({"⟦q1⟧": "yes", "⟦q2⟧": "no", "⟦q3⟧": "yes", "⟦q4⟧": "<<invalid>>"})
    store = f"sqlite:///{tmp_path}/runs.db"
    result = evaluate(DATA / "d01_correctness.jsonl", judges=["correctness"],
                      naming="databricks", store=store)
    rows = by_id(result)
    key = "response/llm_judged/correctness"
    assert [rows[f"q{i}"][f"{key}/rating"] for i in range(1, 6)] == \
        ["yes", "no", "yes", None, None]
    messages = [rows[f"q{i}"][f"{key}/error_message"] for i in range(1, 6)]
    assert messages[:3] == [None, None, None]
    assert messages[3].startswith("judge_output_invalid: ")
    assert messages[4] == ("Missing required field(s): expected_response or expected_facts "
                           "for metric: correctness")
    # the numbers as stored with the run
    stored = RunStore(store).run_record(result.run_id).summary
    assert stored is not None
    summary = stored.model_dump(mode="json")
    metrics = {m["key"]: m["value"] for m in summary["assessments"]["metrics"]}
    assert close(metrics[f"{key}/rating/percentage"], 2 / 3)
    assert metrics["judge/correctness/error_count"] == 1  # q5 is not an error
    assert result.metrics[f"{key}/rating/percentage"] == pytest.approx(2 / 3, abs=1e-9)
    # one request each for q1-q3, three for q4 (1 ask + 2 re-asks), none for q5
    assert stub.total == 6 and stub.calls["⟦q4⟧"] == 3 and not stub.unmatched


# -- D-02 ----------------------------------------------------------------------------------


def test_d02_default_judge_selection() -> None:
    stub = judge({"⟦r1⟧": "yes", "⟦r2⟧": "yes", "⟦r3⟧": "yes"})
    result = evaluate(DATA / "d02_selection.jsonl", judges=None, naming="databricks")
    ran = {r.case_id: {s.name for s in r.scores} for r in result.records}
    assert ran == {"r1": {"correctness", "groundedness", "safety", "context_sufficiency"},
                   "r2": {"relevance_to_query", "safety"},
                   "r3": {"relevance_to_query", "safety", "guideline_adherence"}}
    rows = by_id(result)
    # a judge that was not selected is absent: no value and no missing-input message
    assert "response/llm_judged/correctness/rating" not in rows["r2"]
    assert "response/llm_judged/correctness/error_message" not in rows["r2"]
    assert not any("document_recall" in k for row in rows.values() for k in row)
    assert stub.total == 4 + 2 + 3 and not stub.unmatched
    assert all(s.skipped is None for r in result.records for s in r.scores)


# -- D-03 ----------------------------------------------------------------------------------

CHUNK_TABLE = {
    **{f"⟦c1-{i}⟧": a for i, a in enumerate(["yes", "yes", "yes", "no"], 1)},
    **{f"⟦c2-{i}⟧": a for i, a in enumerate(["yes", "yes", "no", "<<invalid>>"], 1)},
    "⟦c3-1⟧": "<<invalid>>", "⟦c3-2⟧": "<<invalid>>", "⟦c4-1⟧": "yes", "⟦c4-3⟧": "no"}


def test_d03_chunk_precision_in_both_namings() -> None:
    stub = judge(CHUNK_TABLE)
    result = evaluate(DATA / "d03_chunks.jsonl", judges=["chunk_relevance"],
                      naming="databricks")
    key = "retrieval/llm_judged/chunk_relevance"
    rows = by_id(result)
    assert rows["c1"][f"{key}/ratings"] == ["yes", "yes", "yes", "no"]
    assert close(rows["c1"][f"{key}/precision"], 0.75)
    assert rows["c2"][f"{key}/ratings"] == ["yes", "yes", "no", None]
    assert rows["c2"][f"{key}/error_messages"][3] is not None
    assert rows["c2"][f"{key}/error_messages"][:3] == [None, None, None]
    assert close(rows["c2"][f"{key}/precision"], 2 / 3)
    assert rows["c3"][f"{key}/ratings"] == [None, None]
    assert rows["c3"][f"{key}/precision"] is None
    assert rows["c4"][f"{key}/ratings"] == ["yes", None, "no"]
    assert rows["c4"][f"{key}/rationales"][1] == "Chunk content is empty"
    assert rows["c4"][f"{key}/error_messages"][1] is None
    assert close(rows["c4"][f"{key}/precision"], 0.5)
    assert rows["c5"][f"{key}/ratings"] == [None]
    assert rows["c5"][f"{key}/error_messages"][0].startswith("Missing required field(s): ")
    assert rows["c5"][f"{key}/precision"] is None
    m = result.metrics
    assert close(m[f"{key}/precision/average"], (0.75 + 2 / 3 + 0.5) / 3)
    assert m["judge/chunk_relevance/error_count"] == 3  # 1 in c2, 2 in c3
    # calls: c1 4, c2 3 + 3 asks, c3 2 x 3 asks, c4 2 (the empty chunk is not judged)
    assert stub.calls["⟦c4-1⟧"] + stub.calls["⟦c4-3⟧"] == 2
    assert stub.total == 4 + 6 + 6 + 2 and not stub.unmatched

    judge(CHUNK_TABLE)
    mlflow = evaluate(DATA / "d03_chunks.jsonl", judges=["chunk_relevance"], naming="mlflow")
    assert close(mlflow.metrics["retrieval_relevance/precision/mean"],
                 (0.75 + 2 / 3 + 0.5) / 3)
    assert close(by_id(mlflow)["c1"]["retrieval_relevance/precision/value"], 0.75)

    judge(CHUNK_TABLE)
    compat = evaluate(DATA / "d03_chunks.jsonl", judges=["chunk_relevance"],
                      naming="databricks", chunk_errors="count_as_irrelevant")
    rows = by_id(compat)
    assert close(rows["c2"][f"{key}/precision"], 0.5)
    assert close(rows["c3"][f"{key}/precision"], 0.0)
    assert close(compat.metrics[f"{key}/precision/average"], 0.4375)


# -- D-04 ----------------------------------------------------------------------------------


def test_d04_document_recall_uses_sets_and_no_judge() -> None:
    stub = judge({})
    result = evaluate(DATA / "d04_recall.jsonl", judges=["document_recall"],
                      naming="databricks")
    rows = by_id(result)
    key = "retrieval/ground_truth/document_recall"
    got = {rid: rows[rid][key] for rid in ("d1", "d2", "d3", "d4", "d5", "d6")}
    assert got == {"d1": 0.5, "d2": 1.0, "d3": 0.0, "d4": None, "d5": None, "d6": 0.5}
    assert close(result.metrics[f"{key}/average"], 0.5)
    assert result.metrics["judge/document_recall/error_count"] == 0
    assert stub.total == 0


# -- D-05 ----------------------------------------------------------------------------------


def test_d05_guidelines_fan_out_one_call_per_group() -> None:
    stub = judge({("⟦g1⟧", "Respond in English"): "yes", ("⟦g1⟧", "No profanity"): "yes"})
    run_a = evaluate([{"request_id": "g1", "request": "⟦g1⟧ hello", "response": "Hi there.",
                       "guidelines": ["Respond in English", "Be concise"]}],
                     judges=["guideline_adherence", "global_guideline_adherence"],
                     global_guidelines=["No profanity"], naming="databricks")
    row = by_id(run_a)["g1"]
    assert row["response/llm_judged/guideline_adherence/rating"] == "yes"
    assert row["response/llm_judged/global_guideline_adherence/rating"] == "yes"
    assert stub.total == 2  # one call per group, both row guidelines in one prompt
    assert any("Respond in English" in p and "Be concise" in p for p in stub.prompts)

    answers = {"g2": ("yes", "no"), "g3": ("yes", "yes"), "g4": ("no", "no")}
    table: dict[Any, Any] = {}
    for rid, (tone, concise) in answers.items():
        table[(f"⟦{rid}⟧", "⟦tone⟧")] = tone
        table[(f"⟦{rid}⟧", "⟦english⟧")] = "yes"
        table[(f"⟦{rid}⟧", "⟦concise⟧")] = concise
    stub = judge(table)
    rows = [{"request_id": rid, "request": f"⟦{rid}⟧ question", "response": "answer",
             "guidelines": {"tone": ["⟦tone⟧ Be polite"]}} for rid in answers]
    run_b = evaluate(rows, judges=["guideline_adherence", "global_guideline_adherence"],
                     global_guidelines={"english": ["⟦english⟧ Answer in English"],
                                        "concise": ["⟦concise⟧ Be concise"]},
                     naming="databricks")
    row = by_id(run_b)["g2"]
    for column in ("guideline_adherence/tone", "global_guideline_adherence/english",
                   "global_guideline_adherence/concise"):
        assert f"response/llm_judged/{column}/rating" in row
    m = run_b.metrics
    assert close(m["response/llm_judged/guideline_adherence/tone/rating/percentage"], 2 / 3)
    assert close(m["response/llm_judged/global_guideline_adherence/english/rating/percentage"],
                 1.0)
    assert close(m["response/llm_judged/global_guideline_adherence/concise/rating/percentage"],
                 1 / 3)
    assert stub.total == 9 and not stub.unmatched

    judge({"⟦g5⟧": "yes"})
    bare = evaluate([{"request_id": "g5", "request": "⟦g5⟧ q", "response": "a",
                      "guidelines": {"guideline_adherence": ["Be brief"]}}],
                    judges=["guideline_adherence"], naming="databricks")
    assert by_id(bare)["g5"]["response/llm_judged/guideline_adherence/rating"] == "yes"


# -- D-06 / D-07 ---------------------------------------------------------------------------


def test_d06_safety_under_both_aggregate_names() -> None:
    judge({"⟦s1⟧": "yes", "⟦s2⟧": "yes", "⟦s3⟧": "no", "⟦s4⟧": "yes"})
    rows = [{"request_id": f"s{i}", "request": "q", "response": f"⟦s{i}⟧ answer"}
            for i in range(1, 5)]
    result = evaluate(rows, judges=["safety"], naming="databricks")
    m = result.metrics
    assert close(m["response/llm_judged/safety/rating/percentage"], 0.75)
    assert close(m["response/llm_judged/safety/rating/average"], 0.75)
    assert by_id(result)["s3"]["response/llm_judged/safety/rating"] == "no"  # no = unsafe


def test_d07_context_sufficiency_is_a_retrieval_judgement() -> None:
    judge({"⟦x1⟧": "no", "⟦x2⟧": "yes"})
    context = [{"content": "MLflow tracks experiments.", "doc_uri": "u"}]
    rows = [{"request_id": f"x{i}", "request": f"⟦x{i}⟧ q", "response": "a",
             "expected_response": "MLflow tracks experiments.", "retrieved_context": context}
            for i in (1, 2)]
    rows.append({"request_id": "x3", "request": "⟦x2⟧ q", "response": "a",
                 "retrieved_context": context})
    result = evaluate(rows, judges=["context_sufficiency"], naming="databricks")
    key = "retrieval/llm_judged/context_sufficiency"
    table = by_id(result)
    assert [table[f"x{i}"][f"{key}/rating"] for i in (1, 2, 3)] == ["no", "yes", None]
    assert close(result.metrics[f"{key}/rating/percentage"], 0.5)
    assert table["x3"][f"{key}/error_message"] == (
        "Missing required field(s): expected_response or expected_facts for metric: "
        "context_sufficiency")


# -- D-08 ----------------------------------------------------------------------------------


def test_d08_custom_judges_numeric_scores_become_yes_no() -> None:
    rows = [{"request_id": f"p{i}", "request": "q", "response": f"⟦p{i}⟧ answer"}
            for i in (1, 2, 3)]
    polite = {"type": "custom_judge", "name": "polite", "assessment_type": "ANSWER",
              "instructions": "Rate from 1 to 5 how polite this is: {{ response }}",
              "score_threshold": 3, "greater_is_better": True}
    judge({"⟦p1⟧": 5, "⟦p2⟧": 3, "⟦p3⟧": 2})
    result = evaluate(rows, evaluators=[polite], naming="databricks")
    key = "response/llm_judged/polite"
    assert [by_id(result)[f"p{i}"][f"{key}/rating"] for i in (1, 2, 3)] == ["yes", "yes", "no"]
    assert close(result.metrics[f"{key}/rating/percentage"], 2 / 3)

    judge({"⟦p1⟧": 5, "⟦p2⟧": 3, "⟦p3⟧": 2})
    lower = evaluate(rows, evaluators=[{**polite, "greater_is_better": False}],
                     naming="databricks")
    assert [by_id(lower)[f"p{i}"][f"{key}/rating"] for i in (1, 2, 3)] == ["no", "yes", "yes"]

    judge({f"⟦f{i}⟧": s for i, s in enumerate([5, 3, 2, 1], 1)})
    fresh = {"type": "custom_judge", "name": "fresh", "assessment_type": "RETRIEVAL",
             "instructions": "Rate from 1 to 5 how fresh this passage is: "
                             "{{ retrieved_context }}"}
    chunks = [{"content": f"⟦f{i}⟧ passage", "doc_uri": str(i)} for i in range(1, 5)]
    result = evaluate([{"request_id": "f", "request": "q", "response": "a",
                        "retrieved_context": chunks}], evaluators=[fresh], naming="databricks")
    row = by_id(result)["f"]
    assert row["retrieval/llm_judged/fresh/ratings"] == ["yes", "yes", "no", "no"]
    assert close(row["retrieval/llm_judged/fresh/precision"], 0.5)

    stub = judge({"⟦p1⟧": 5})
    with pytest.raises(EvaluationError, match=r"assessment_type 'CHUNK'.*ANSWER, RETRIEVAL"):
        evaluate(rows, evaluators=[{**polite, "assessment_type": "CHUNK"}], naming="databricks")
    assert stub.total == 0  # a config error before any call


# -- D-09 / D-10 ---------------------------------------------------------------------------


def test_d09_expected_response_wins_over_facts() -> None:
    stub = judge({"⟦e⟧": "yes", "⟦f⟧": "yes"})
    result = evaluate([{"request_id": "both", "request": "⟦e⟧ capital of France?",
                        "response": "Paris", "expected_response": "⟦e⟧ Paris",
                        "expected_facts": ["capital"]}], judges=["correctness"],
                      naming="databricks")
    (claim,) = [m.group(2) for m in CLAIM.finditer(stub.prompts[0])]
    assert "Paris" in claim and "capital" not in claim
    assert result.records[0].scores[0].details["ignored"] == "expected_facts"

    stub = judge({"⟦f⟧": "yes"})
    evaluate([{"request_id": "facts", "request": "⟦f⟧ capital of France?",
               "response": "Paris", "expected_facts": ["capital"]}], judges=["correctness"])
    (claim,) = [m.group(2) for m in CLAIM.finditer(stub.prompts[0])]
    assert claim == "\n- capital"


def test_d10_multi_turn_request_last_message_or_all() -> None:
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
                {"role": "user", "content": "⟦m1⟧ What is MLflow?"}]
    row = {"request_id": "m", "request": {"messages": messages}, "response": "A platform."}
    stub = judge({"⟦m1⟧": "yes"})
    evaluate([row], judges=["relevance_to_query"])
    (slot,) = [m.group(2) for m in QUESTION.finditer(stub.prompts[0])]
    assert slot == "⟦m1⟧ What is MLflow?"
    assert "Hi" not in stub.prompts[0]

    stub = judge({"⟦m1⟧": "yes"})
    evaluate([row], judges=["relevance_to_query"], request_from_messages="all")
    (slot,) = [m.group(2) for m in QUESTION.finditer(stub.prompts[0])]
    assert json.loads(slot) == messages


# -- D-11 to D-14: MLflow 3 style ----------------------------------------------------------

MLFLOW_ROWS = [{"inputs": {"question": f"⟦r{i}⟧ question {i}"},
                "outputs": f"⟦o{i}⟧ answer {i}",
                "expectations": {"expected_response": f"⟦exp-{i}⟧ truth {i}"}}
               for i in (1, 2, 3)]
MLFLOW_TABLE: dict[Any, Any] = {
    "⟦exp-1⟧": "yes", "⟦exp-2⟧": "no", "⟦exp-3⟧": "<<invalid>>", "⟦tone⟧": "yes",
    "⟦o1⟧": "yes", "⟦o2⟧": "yes", "⟦o3⟧": "yes"}


def mlflow_scorers() -> list[Any]:
    return [Correctness(), Guidelines(name="tone", guidelines=["⟦tone⟧ Be polite"]), Safety()]


def test_d11_mlflow_style_metrics_result_df_and_passed() -> None:
    stub = judge(MLFLOW_TABLE)
    result = evaluate(MLFLOW_ROWS, naming="mlflow", scorers=mlflow_scorers())
    assert result.metrics == {"correctness/mean": 0.5, "tone/mean": 1.0, "safety/mean": 1.0}
    frame = result.result_df
    for column in ("correctness/value", "correctness/rationale", "correctness/error_message",
                   "correctness/error_code", "tone/value", "tone/rationale", "safety/value",
                   "safety/rationale"):
        assert column in frame.columns, column
    assert "tone/error_message" not in frame.columns  # error columns only where errors occurred
    third = result.rows()[2]
    assert third["correctness/value"] is None
    assert third["correctness/error_code"] == "judge_output_invalid"
    assert result.passed is False
    assert result.reason.startswith("2 assertions failed:")
    assert "correctness: stub" in result.reason
    assert "correctness: judge_output_invalid" in result.reason
    assert not stub.unmatched


def test_d12_aggregations_population_variance_and_linear_p90() -> None:
    @assay.scorer(kind="measurement",
                  aggregations=["mean", "min", "max", "median", "variance", "p90"])
    def s(outputs: str) -> int:
        if outputs == "5":
            raise ValueError("no score for five")
        return int(outputs)

    rows = [{"request_id": f"n{i}", "inputs": "q", "outputs": str(i)} for i in range(1, 6)]
    result = evaluate(rows, scorers=[s], naming="mlflow")
    m = result.metrics
    assert m["s/mean"] == 2.5 and m["s/min"] == 1.0 and m["s/max"] == 4.0
    assert m["s/median"] == 2.5
    assert close(m["s/variance"], 1.25) and close(m["s/p90"], 3.7)
    assert by_id(result)["n5"]["s/error_code"] == "scorer_error"


def test_d13_quality_criteria() -> None:
    stub = judge(MLFLOW_TABLE)
    result = evaluate(MLFLOW_ROWS, naming="mlflow", scorers=mlflow_scorers(),
                      quality_criteria="correctness >= 0.9 AND `safety/mean` >= 1")
    assert result.criteria_failures == ["correctness/mean >= 0.9 (got 0.5)"]
    assert result.passed is False
    calls = stub.total
    for bad in ("correctness >> 0.9", "correctnes >= 0.9"):
        with pytest.raises(ConfigError, match="quality criteria"):
            evaluate(MLFLOW_ROWS, naming="mlflow", scorers=mlflow_scorers(),
                     quality_criteria=bad)
    assert stub.total == calls  # refused before any call


def test_d14_scorer_injection_values_and_feedback() -> None:
    seen: dict[str, Any] = {}

    @assay.scorer
    def a(outputs: Any) -> bool:
        seen["a"] = outputs
        return True

    @assay.scorer
    def b(inputs: Any, expectations: Any) -> float:
        seen["b"] = (inputs, expectations)
        return 0.7

    @assay.scorer
    def c(outputs: Any) -> str:
        return "yes"

    @assay.scorer
    def d(outputs: Any) -> Feedback:
        return Feedback(value="no", rationale="r")

    @assay.scorer
    def e(outputs: Any) -> list[Feedback]:
        return [Feedback(name="x", value=True), Feedback(name="y", value="yes")]

    row = {"request_id": "k", "inputs": {"q": 1}, "outputs": "out",
           "expectations": {"expected_response": "ref"}}
    result = evaluate([row], scorers=[a, b, c, d, e], naming="mlflow")
    assert seen["a"] == "out"
    # the expectations as given: MLflow adds no key, so neither does assay
    assert seen["b"] == ({"q": 1}, {"expected_response": "ref"})
    values = result.rows()[0]
    assert (values["a/value"], values["b/value"], values["c/value"], values["d/value"]) == \
        (True, 0.7, "yes", "no")
    assert values["x/value"] is True and values["y/value"] == "yes"
    assert result.passed is False
    assert "1 assertions failed:" in result.reason and "d: r" in result.reason
    assert "needs a yes/no or bool" in result.reason and "b: a number" in result.reason

    checked = assay.scorer(name="b", pass_if=">= 0.5")(b.fn)
    again = evaluate([row], scorers=[a, checked, c], naming="mlflow")
    assert again.passed is True and again.reason == "passed"
    assert "needs a yes/no" not in again.reason


def test_expectations_keep_the_names_the_data_gave(tmp_path: Path) -> None:
    """The expected answer reaches scorers once, under the row's own name, after a store
    round trip too; a case of assay's own columns serialises as it did before."""
    seen: list[Any] = []

    @assay.scorer
    def look(expectations: Any) -> bool:
        seen.append(expectations)
        return True

    store = f"sqlite:///{tmp_path}/runs.db"
    rows = [{"request_id": "m", "inputs": "q", "outputs": "a",
             "expectations": {"expected_response": "r", "expected_facts": ["f"]}},
            {"request_id": "l", "request": "q", "response": "a", "expected_response": "r"}]
    result = evaluate(rows, scorers=[look], naming="mlflow", store=store)
    assert seen == [{"expected_response": "r", "expected_facts": ["f"]},
                    {"expected_response": "r"}]
    stored = RunStore(store).case_records(result.run_id)
    assert {r.case.expected_output_key for r in stored} == {"expected_response"}
    native = evaluate([{"id": "n", "input": "q", "output": "a", "expected_output": "r"}],
                      scorers=[look], naming="mlflow")
    assert seen[-1] == {"expected_output": "r"}
    assert "expected_output_key" not in native.records[0].case.model_dump()


# -- D-15 ----------------------------------------------------------------------------------


def test_d15_make_judge_validation_and_typed_feedback() -> None:
    for instructions in ("Rate {{ outputs }} vs {{ reference }}",
                         "Judge {{ conversation }} given {{ inputs }}", "Judge this answer"):
        with pytest.raises(ConfigError, match="inputs, outputs, expectations, trace, "
                                              "conversation"):
            make_judge("j", instructions)
    stub = judge({"⟦o⟧": {"rationale": "stub", "result": "meh"}})
    quality = make_judge("quality", "Is this answer good or bad? {{ outputs }}",
                         feedback_value_type=Literal["good", "bad"])
    from assay.judges.agent.custom import answer_model

    enum = answer_model("str", ("good", "bad"), False).model_json_schema()
    assert enum["properties"]["result"]["enum"] == ["good", "bad"]
    result = evaluate([{"request_id": "j", "inputs": "q", "outputs": "⟦o⟧ fine"}],
                      scorers=[quality], naming="mlflow")
    score = result.records[0].scores[0]
    assert score.error is not None and score.error.code == "judge_output_invalid"
    assert stub.total == 3  # asked, then re-asked twice


# -- D-16 ----------------------------------------------------------------------------------


def _otlp_span(span_id: str, name: str, kind: str, parent: str | None = None,
               output: Any = None) -> dict[str, Any]:
    attributes = [{"key": "openinference.span.kind", "value": {"stringValue": kind}}]
    if output is not None:
        attributes.append({"key": "output.value",
                           "value": {"stringValue": json.dumps(output)}})
    span = {"traceId": "0" * 32, "spanId": span_id, "name": name, "attributes": attributes,
            "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000001000000000"}
    if parent:
        span["parentSpanId"] = parent
    return span


def retrieval_trace() -> dict[str, Any]:
    spans = [
        _otlp_span("00000000000000a0", "chain", "CHAIN"),
        _otlp_span("00000000000000a1", "R1", "RETRIEVER", "00000000000000a0", [
            {"page_content": "⟦A⟧ text A", "metadata": {"doc_uri": "u1"}},
            {"content": "⟦B⟧ text B", "metadata": {"doc_uri": "u2"}}]),
        _otlp_span("00000000000000a2", "R2", "RETRIEVER", "00000000000000a1", [
            {"page_content": "⟦C⟧ text C", "metadata": {"doc_uri": "u3"}}]),
        _otlp_span("00000000000000a3", "R3", "RETRIEVER", "00000000000000a0", [
            {"title": "x"}]),
    ]
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def test_d16_retrieved_context_only_from_top_level_retriever_spans() -> None:
    stub = judge({"⟦A⟧": "yes", "⟦B⟧": "no", "⟦C⟧": "yes"})
    row = {"request_id": "t", "request": "question", "response": "answer",
           "trace": retrieval_trace(),
           "expected_retrieved_context": [{"doc_uri": "u1"}, {"doc_uri": "u9"}]}
    result = evaluate([row], judges=["chunk_relevance", "document_recall", "groundedness"],
                      naming="databricks")
    values = by_id(result)["t"]
    key = "retrieval/llm_judged/chunk_relevance"
    # R1's chunks A and B are judged; R2 (inside R1) is ignored; R3's document has no text
    assert values[f"{key}/ratings"] == ["yes", "no", None]
    assert values[f"{key}/error_messages"][2].startswith("unparsable_retrieval_context: ")
    assert stub.calls["⟦C⟧"] == 0 and stub.total == 2
    assert values["retrieval/ground_truth/document_recall"] == 0.5
    # a whole-context judge is not asked about a context with an unreadable part
    grounded = result.records[0].score_named("groundedness")
    assert grounded is not None and grounded.error is not None
    assert grounded.error.code == "unparsable_retrieval_context"


# -- D-17 ----------------------------------------------------------------------------------


def test_d17_significance_by_hand() -> None:
    # (a) pass/fail pairs: 5 regressed, 1 improved; p = 2*(C(6,0)+C(6,1))/2^6 = 14/64
    a = paired_compare([1, 1, 1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 0, 1, 0, 1])
    assert (a.method, a.regressed, a.improved) == ("mcnemar_exact", 5, 1)
    assert close(a.p_value, 0.21875) and close(a.diff, -0.5)
    assert any("small sample" in w for w in a.warnings)
    # (b) six pairs all 0 -> 1: p = 2/2^6
    b = paired_compare([0] * 6, [1] * 6)
    assert close(b.p_value, 0.03125) and b.diff == 1.0
    assert (b.ci_low, b.ci_high) == (1.0, 1.0)
    # (c) numbers, six pairs each +10: exact Wilcoxon, all ranks positive, p = 2/2^6
    c = paired_compare([50.0, 60, 70, 80, 90, 40], [60.0, 70, 80, 90, 100, 50])
    assert c.method == "wilcoxon_exact" and close(c.p_value, 0.03125)
    assert (c.ci_low, c.ci_high) == (10.0, 10.0)
    assert c.t_test_p_value is not None and math.isnan(c.t_test_p_value)
    # (d) five pairs: nothing to test
    d = paired_compare([1, 0, 1, 0, 1], [0, 0, 0, 0, 0])
    assert d.status == "insufficient_pairs" and d.p_value is None
    # (e) eight identical pairs
    assert paired_compare([1, 0, 1, 1, 0, 1, 1, 0], [1, 0, 1, 1, 0, 1, 1, 0]).p_value == 1.0


def test_d17_two_judged_runs_compared_with_significance(tmp_path: Path) -> None:
    """(a) end to end: two stored correctness runs whose case verdicts are (a)'s pairs."""
    store = f"sqlite:///{tmp_path}/runs.db"
    rows = [{"request_id": f"s{i}", "request": f"⟦s{i}⟧ q", "response": "a",
             "expected_response": "t"} for i in range(1, 9)]
    base = ["yes"] * 6 + ["no"] * 2
    cand = ["no"] * 5 + ["yes", "no", "yes"]
    runs = []
    for answers in (base, cand):
        judge({f"⟦s{i}⟧": answer for i, answer in enumerate(answers, 1)})
        runs.append(evaluate(rows, judges=["correctness"], naming="databricks", store=store))
    comparison = assay.compare(runs[0].run_id, runs[1].run_id, store=store)
    cases = comparison.significance["cases"]
    assert (cases.method, cases.regressed, cases.improved) == ("mcnemar_exact", 5, 1)
    assert close(cases.p_value, 0.21875) and close(cases.diff, -0.5)
    assert cases.significant is False


# -- D-18 / D-19 ---------------------------------------------------------------------------


def test_d18_latency_seconds() -> None:
    judge({"⟦l⟧": "yes"})
    rows = [{"request_id": f"l{i}", "request": "⟦l⟧ q", "response": "a", "latency_ms": ms}
            for i, ms in ((1, 500), (2, 1500))]
    result = evaluate(rows, judges=["safety"], naming="databricks")
    table = by_id(result)
    assert (table["l1"]["agent/latency_seconds"], table["l2"]["agent/latency_seconds"]) == \
        (0.5, 1.5)
    assert result.metrics["agent/latency_seconds/average"] == 1.0


def test_d19_overall_assessment() -> None:
    judge({("⟦o1⟧", "<claim"): "yes", ("⟦o1⟧", "safe"): "yes",
           ("⟦o1⟧", "guidelines"): "no",
           "⟦o2⟧": "yes", ("⟦o2-c1⟧",): "yes", ("⟦o2-c2⟧",): "no",
           "⟦o3⟧": "<<invalid>>"})
    chunks = [{"content": "⟦o2-c1⟧ one", "doc_uri": "1"}, {"content": "⟦o2-c2⟧ two",
                                                           "doc_uri": "2"}]
    rows = [{"request_id": "o1", "request": "⟦o1⟧ q", "response": "a", "expected_response": "t",
             "guidelines": ["Be brief"]},
            {"request_id": "o2", "request": "⟦o2⟧ q", "response": "a", "expected_response": "t",
             "guidelines": ["Be brief"], "retrieved_context": chunks},
            {"request_id": "o3", "request": "⟦o3⟧ q", "response": "a", "expected_response": "t",
             "guidelines": ["Be brief"]}]
    result = evaluate(rows, naming="databricks", evaluators=[
        "correctness", "safety", "guideline_adherence", "chunk_relevance"])
    table = by_id(result)
    key = "response/overall_assessment"
    assert table["o1"][f"{key}/rating"] == "no"
    assert "guideline_adherence" in table["o1"][f"{key}/rationale"]
    assert close(table["o2"]["retrieval/llm_judged/chunk_relevance/precision"], 0.5)
    assert table["o2"][f"{key}/rating"] == "yes"  # chunk judges do not take part
    assert table["o3"][f"{key}/rating"] is None
    assert close(result.metrics[f"{key}/rating/percentage"], 0.5)
    assert not math.isnan(result.metrics[f"{key}/rating/percentage"])
