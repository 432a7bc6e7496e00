"""Custom judges of the Databricks / MLflow family, through the stub judge: what each judge
was sent (the rendered template variables, the answer schema) and what came back.

``make_judge`` with bool, int and float feedback; ``{{ expectations }}``, ``{{ trace }}`` and
``{{ conversation }}`` rendered into the prompt; Databricks' RETRIEVAL_LIST custom judge over
the whole retrieved context.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

import assay
from assay.judges.agent.custom import make_judge
from tests.acceptance.stub import StubJudge

FRAME = r"<{tag}_([0-9a-f]+)>\n(.*?)\n</{tag}_\1>"


def judge(table: dict[Any, Any]) -> StubJudge:
    stub = StubJudge(table)
    assay.register_service("stub", stub)
    return stub


def evaluate(data: Any, **options: Any) -> assay.EvaluationResult:
    return assay.evaluate(data, judge_model="custom:stub", cache="off", **options)


def section(prompt: str, tag: str) -> str:
    """The text a template variable was rendered to (inside its delimiting frame)."""
    found = re.findall(FRAME.format(tag=tag), prompt, re.S)
    assert len(found) == 1, f"expected one <{tag}_...> frame in {prompt!r}"
    return str(found[0][1])


def schema_of(request: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema the judge was asked to answer in."""
    schema: dict[str, Any] = request["response_format"]["json_schema"]["schema"]
    return schema


def answer(result: Any) -> dict[str, Any]:
    return {"rationale": "stub", "result": result}


# -- make_judge: typed feedback -------------------------------------------------------------


def test_bool_feedback_is_a_boolean_schema_and_a_pass_or_fail() -> None:
    stub = judge({"⟦t⟧": answer(True), "⟦f⟧": answer(False), "⟦s⟧": answer("maybe")})
    ok = make_judge("ok", "Is this answer right? {{ outputs }}", feedback_value_type=bool)
    rows = [{"request_id": k, "inputs": "q", "outputs": f"⟦{k}⟧ answer"} for k in "tfs"]
    result = evaluate(rows, scorers=[ok], naming="mlflow")
    assert schema_of(stub.requests[0])["properties"]["result"]["type"] == "boolean"
    scores = {r.case_id: r.score_named("ok") for r in result.records}
    assert scores["t"] is not None and scores["f"] is not None and scores["s"] is not None
    assert (scores["t"].raw, scores["t"].value, scores["t"].passed) == (True, 1.0, True)
    assert (scores["f"].raw, scores["f"].value, scores["f"].passed) == (False, 0.0, False)
    # a word that is not a bool is asked again, then an error, never a False
    assert scores["s"].error is not None and scores["s"].error.code == "judge_output_invalid"
    assert stub.calls["⟦s⟧"] == 3 and stub.total == 5
    rows_out = {r["request_id"]: r for r in result.rows()}
    assert rows_out["t"]["ok/value"] is True and rows_out["f"]["ok/value"] is False
    assert rows_out["s"]["ok/value"] is None and rows_out["s"]["ok/error_code"] == \
        "judge_output_invalid"
    assert result.metrics["ok/mean"] == 0.5  # one yes of two values; the error is not a 0


def test_int_feedback_refuses_a_fraction() -> None:
    stub = judge({"⟦4⟧": answer(4), "⟦x⟧": answer(2.5)})
    stars = make_judge("stars", "Give 1 to 5 stars: {{ outputs }}", feedback_value_type=int)
    rows = [{"request_id": k, "inputs": "q", "outputs": f"⟦{k}⟧ answer"} for k in "4x"]
    result = evaluate(rows, scorers=[stars], naming="mlflow")
    assert schema_of(stub.requests[0])["properties"]["result"]["type"] == "integer"
    scores = {r.case_id: r.score_named("stars") for r in result.records}
    four, fraction = scores["4"], scores["x"]
    assert four is not None and four.raw == 4 and isinstance(four.raw, int)
    assert four.error is None and four.rationale == "stub"
    assert fraction is not None and fraction.error is not None
    assert fraction.error.code == "judge_output_invalid"
    assert stub.calls["⟦x⟧"] == 3  # asked, then re-asked twice
    assert {r["request_id"]: r["stars/value"] for r in result.rows()} == {"4": 4, "x": None}
    assert result.metrics["stars/mean"] == 4.0


def test_float_feedback_keeps_the_number() -> None:
    stub = judge({"⟦a⟧": answer(0.25), "⟦b⟧": answer(1), "⟦c⟧": answer("high")})
    level = make_judge("level", "How confident is {{ outputs }}?", feedback_value_type=float)
    rows = [{"request_id": k, "inputs": "q", "outputs": f"⟦{k}⟧ answer"} for k in "abc"]
    result = evaluate(rows, scorers=[level], naming="mlflow")
    assert schema_of(stub.requests[0])["properties"]["result"]["type"] == "number"
    values = {r["request_id"]: r["level/value"] for r in result.rows()}
    assert values == {"a": 0.25, "b": 1.0, "c": None}
    scores = {r.case_id: r.score_named("level") for r in result.records}
    assert scores["c"] is not None and scores["c"].error is not None
    assert scores["c"].error.code == "judge_output_invalid" and stub.calls["⟦c⟧"] == 3
    assert result.metrics["level/mean"] == pytest.approx(0.625, abs=1e-12)


# -- make_judge: template variables ---------------------------------------------------------


def test_expectations_render_as_the_rows_own_dict() -> None:
    stub = judge({"⟦e⟧": answer("yes")})
    match = make_judge("match", "Does {{ outputs }} meet {{ expectations }}?")
    row = {"request_id": "e", "inputs": {"question": "capital?"}, "outputs": "⟦e⟧ Paris",
           "expectations": {"expected_response": "Paris", "expected_facts": ["capital"],
                            "tone": "formal"}}
    result = evaluate([row], scorers=[match], naming="mlflow")
    prompt = stub.prompts[0]
    assert section(prompt, "outputs") == "⟦e⟧ Paris"
    assert json.loads(section(prompt, "expectations")) == {
        "expected_response": "Paris", "expected_facts": ["capital"], "tone": "formal"}
    assert "<inputs_" not in prompt  # only the variables the instructions use
    assert result.rows()[0]["match/value"] == "yes"

    # no expectations at all: not applicable, no call
    bare = evaluate([{"request_id": "n", "inputs": "q", "outputs": "⟦e⟧ a"}], scorers=[match],
                    naming="mlflow")
    score = bare.records[0].score_named("match")
    assert score is not None and score.skipped is not None and "expectations" in score.skipped
    assert stub.total == 1


def test_trace_renders_the_spans_as_json_without_tools() -> None:
    """With ``max_tool_calls=0`` the trace is put in the prompt as JSON (with tools, the
    default, the judge reads it through them: tests/acceptance/test_mlflow3_trace_judge.py)."""
    stub = judge({"⟦tr⟧": answer("yes")})
    spans = [{"name": "agent", "span_id": "s1", "attributes": {"input.value": "⟦tr⟧ q"}},
             {"name": "search", "span_id": "s2", "parent_id": "s1",
              "attributes": {"openinference.span.kind": "TOOL", "output.value": "found"}}]
    efficient = make_judge("efficient", "Was this run efficient? {{ trace }}",
                           feedback_value_type=bool, max_tool_calls=0)
    result = evaluate([{"request_id": "tr", "inputs": "q", "outputs": "a", "trace": spans}],
                      scorers=[efficient], naming="mlflow")
    rendered = json.loads(section(stub.prompts[0], "trace"))
    assert [s["name"] for s in rendered] == ["agent", "search"]
    assert rendered[1]["parent_id"] == "s1"
    assert rendered[1]["attributes"]["output.value"] == "found"
    # "yes" is not a bool for a bool judge: asked again, then an error
    score = result.records[0].score_named("efficient")
    assert score is not None and score.error is not None

    judge({"⟦tr⟧": answer(True)})
    again = evaluate([{"request_id": "tr", "inputs": "q", "outputs": "a", "trace": spans}],
                     scorers=[efficient], naming="mlflow")
    assert again.rows()[0]["efficient/value"] is True

    # no trace: not applicable, no call
    stub = judge({"⟦tr⟧": answer(True)})
    none = evaluate([{"request_id": "nt", "inputs": "⟦tr⟧ q", "outputs": "a"}],
                    scorers=[efficient], naming="mlflow")
    score = none.records[0].score_named("efficient")
    assert score is not None and score.skipped is not None and "trace" in score.skipped
    assert stub.total == 0


def test_conversation_renders_every_turn_and_the_answer() -> None:
    stub = judge({"⟦cv⟧": answer("yes")})
    flow = make_judge("flow", "Did the assistant keep the thread? {{ conversation }} "
                              "Expected: {{ expectations }}")
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
                {"role": "user", "content": "⟦cv⟧ What is MLflow?"}]
    row = {"request_id": "cv", "request": {"messages": messages},
           "response": "An ML platform.", "expected_response": "A platform"}
    result = evaluate([row], scorers=[flow], naming="mlflow")
    prompt = stub.prompts[0]
    assert json.loads(section(prompt, "conversation")) == [
        *messages, {"role": "assistant", "content": "An ML platform."}]
    assert json.loads(section(prompt, "expectations")) == {"expected_response": "A platform"}
    assert result.rows()[0]["flow/value"] == "yes" and stub.total == 1


# -- Databricks' RETRIEVAL_LIST custom judge ------------------------------------------------


ENOUGH = {"type": "custom_judge", "name": "enough", "assessment_type": "RETRIEVAL_LIST",
          "instructions": "Rate 1 to 5 whether {{ retrieved_context }} is enough to answer "
                          "{{ request }}."}


def test_retrieval_list_judges_the_whole_context_in_one_call() -> None:
    stub = judge({"⟦L1⟧": 4, "⟦L2⟧": 2})
    chunks = [{"content": "⟦L1⟧ first", "doc_uri": "a"}, {"content": "second", "doc_uri": "b"},
              {"content": "third", "doc_uri": "c"}]
    rows = [{"request_id": "L1", "request": "q1", "response": "a",
             "retrieved_context": chunks},
            {"request_id": "L2", "request": "q2", "response": "a",
             "retrieved_context": [{"content": "⟦L2⟧ only", "doc_uri": "d"}]},
            {"request_id": "L3", "request": "q3", "response": "a"}]
    result = evaluate(rows, evaluators=[ENOUGH], naming="databricks")
    # one call per row with context, none for the row without
    assert stub.total == 2 and stub.calls["⟦L1⟧"] == 1 and stub.calls["⟦L2⟧"] == 1
    first = next(p for p in stub.prompts if "⟦L1⟧" in p)
    assert section(first, "retrieved_context") == "[1] ⟦L1⟧ first\n\n[2] second\n\n[3] third"
    assert section(first, "request") == "q1"
    table = {r["request_id"]: r for r in result.rows()}
    key = "retrieval/llm_judged/enough"
    assert [table[i][f"{key}/rating"] for i in ("L1", "L2", "L3")] == ["yes", "no", None]
    assert "retrieval/llm_judged/enough/ratings" not in table["L1"]  # one rating, no chunks
    assert table["L3"][f"{key}/error_message"] == \
        "Missing required field(s): retrieved_context for metric: enough"
    assert result.metrics[f"{key}/rating/percentage"] == 0.5
    score = next(r for r in result.records if r.case_id == "L1").score_named("enough")
    assert score is not None and score.details is not None
    assert (score.details["score"], score.details["threshold"]) == (4, 3.0)


def test_retrieval_list_with_an_unreadable_chunk_is_not_judged() -> None:
    stub = judge({"⟦U⟧": "yes"})
    spans = [{"name": "retrieve", "span_id": "r1",
              "attributes": {"openinference.span.kind": "RETRIEVER",
                             "output.value": json.dumps([{"page_content": "⟦U⟧ text"},
                                                         {"title": "no text"}])}}]
    result = evaluate([{"request_id": "U", "request": "q", "response": "a", "trace": spans}],
                      evaluators=[ENOUGH], naming="databricks")
    score = result.records[0].score_named("enough")
    assert score is not None and score.error is not None
    assert score.error.code == "unparsable_retrieval_context"
    assert stub.total == 0
