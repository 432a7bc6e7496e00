"""MLflow 3 as users run it today: rows answered from traces, rows with no answer, agents that
return their retrieved context.

The traces in ``databricks/mlflow3_*.json`` were written by mlflow 3.17.2 itself
(``Trace.to_json()`` of a traced function), and the MLflow figures quoted below are what
``mlflow.genai.evaluate`` reported on the same trace with a judge answering as the stub does.
"""

from __future__ import annotations

import json
from typing import Any

import assay
from tests.acceptance.test_databricks import DATA, by_id, evaluate, judge


def trace_file(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((DATA / name).read_text(encoding="utf-8"))
    return loaded


# -- rows answered from a trace ------------------------------------------------------------


def test_a_trace_whose_output_is_null_has_no_answer() -> None:
    """MLflow stores a traced function's None as the text ``null``: that is no answer (a
    missing input), never the answer "null" put to the judge."""
    stub = judge({"⟦resp⟧": "yes"})
    result = evaluate(DATA / "m01_answered_by_trace.jsonl", judges=["correctness"],
                      naming="databricks")
    rows = by_id(result)
    key = "response/llm_judged/correctness"
    assert rows["n1"][f"{key}/rating"] is None
    assert rows["n1"][f"{key}/error_message"] == \
        "Missing required field(s): response for metric: correctness"
    assert rows["n1"]["response"] is None
    assert rows["p1"][f"{key}/rating"] == "yes"
    assert stub.total == 1 and not stub.unmatched  # only p1's answer went to the judge
    assert result.metrics["judge/correctness/error_count"] == 0


def test_rows_answered_from_a_trace_have_its_answer_and_duration_in_both_namings() -> None:
    """The root span's output is the response, the trace's duration the latency: 135 ms in
    the file (MLflow's own result_df said execution_duration 135 and response "⟦resp⟧ Paris")."""
    judge({"⟦resp⟧": "yes"})
    mlflow = evaluate(DATA / "m01_answered_by_trace.jsonl", judges=["correctness"],
                      naming="mlflow")
    row = by_id(mlflow)["p1"]
    assert row["response"] == "⟦resp⟧ Paris" and row["outputs"] == "⟦resp⟧ Paris"
    assert row["execution_duration"] == 135
    assert by_id(mlflow)["n1"]["execution_duration"] == 135  # null answer, timed all the same

    judge({"⟦resp⟧": "yes"})
    legacy = evaluate(DATA / "m01_answered_by_trace.jsonl", judges=["correctness"],
                      naming="databricks")
    rows = by_id(legacy)
    info = trace_file("mlflow3_two_retrievers_trace.json")["info"]
    assert info["execution_duration_ms"] == 135  # MLflow's own figure for the trace
    assert rows["p1"]["agent/latency_seconds"] == 0.135
    assert rows["p1"]["response"] == "⟦resp⟧ Paris"
    assert legacy.metrics["agent/latency_seconds/average"] == 0.135


# -- rows with no answer -------------------------------------------------------------------


def test_a_row_without_a_response_column_is_a_missing_input() -> None:
    """Databricks judges such a row as it judges ``"response": null``: the response is a
    missing input (not an error, not a failed target) and no judge is asked."""
    stub = judge({"⟦u3⟧": "yes"})
    result = evaluate(DATA / "m02_no_response.jsonl", judges=["correctness"],
                      naming="databricks")
    rows = by_id(result)
    key = "response/llm_judged/correctness"
    missing = "Missing required field(s): response for metric: correctness"
    assert rows["u1"][f"{key}/error_message"] == missing
    assert rows["u2"][f"{key}/error_message"] == missing
    assert rows["u3"][f"{key}/rating"] == "yes"
    assert result.metrics["judge/correctness/error_count"] == 0
    assert result.metrics[f"{key}/rating/percentage"] == 1.0
    assert {r.case_id: r.verdict.value for r in result.records} == \
        {"u1": "skipped", "u2": "skipped", "u3": "pass"}
    assert all(s.error is None for r in result.records for s in r.scores)
    assert stub.total == 1


def test_without_a_naming_a_row_with_no_output_is_still_a_target_error() -> None:
    """Outside the Databricks policy nothing changes: no output and no agent is an error."""
    result = assay.evaluate([{"id": "a", "input": "q"}], evaluators=["exact_match"],
                            store=":memory:")
    (record,) = result.records
    assert record.execution.error == "no recorded output for case 'a'"


# -- an agent that returns its retrieved context -------------------------------------------


def test_a_predict_fn_returning_retrieved_context_has_its_chunks_judged() -> None:
    """``{"response": ..., "retrieved_context": [...]}`` from the agent: the chunks are the
    retrieved context of every retrieval judge, of document_recall and of the default
    selection, and the answer text is the ``response``."""
    stub = judge({"⟦k1⟧": "yes", "⟦k2⟧": "no", ("⟦ans⟧", "⟦k1⟧"): "yes"})

    def agent(question: str) -> dict[str, Any]:
        return {"response": "⟦ans⟧ Paris",
                "retrieved_context": [{"content": "⟦k1⟧ Paris is the capital.", "doc_uri": "u1"},
                                      {"page_content": "⟦k2⟧ Lyon.",
                                       "metadata": {"doc_uri": "u2"}}]}

    rows = [{"request_id": "r", "inputs": {"question": "capital of France?"},
             "expectations": {"expected_retrieved_context": [{"doc_uri": "u1"},
                                                             {"doc_uri": "u9"}]}}]
    result = evaluate(rows, predict_fn=agent, naming="databricks",
                      judges=["chunk_relevance", "groundedness", "document_recall"])
    row = by_id(result)["r"]
    assert row["retrieval/llm_judged/chunk_relevance/ratings"] == ["yes", "no"]
    assert row["retrieval/llm_judged/chunk_relevance/precision"] == 0.5
    assert row["response/llm_judged/groundedness/rating"] == "yes"
    assert row["retrieval/ground_truth/document_recall"] == 0.5
    assert [c["doc_uri"] for c in row["retrieved_context"]] == ["u1", "u2"]
    assert stub.total == 3 and not stub.unmatched

    judge({"⟦k1⟧": "yes", "⟦k2⟧": "no", ("⟦ans⟧", "⟦k1⟧"): "yes"})
    chosen = evaluate(rows, predict_fn=agent, naming="databricks")
    assert {s.name for s in chosen.records[0].scores} == \
        {"relevance_to_query", "safety", "groundedness", "chunk_relevance", "document_recall"}

