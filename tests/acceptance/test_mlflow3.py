"""MLflow 3 as users run it today: rows answered from traces, rows with no answer, agents that
return their retrieved context, the trace columns of ``result_df`` and retrieval per span.

The traces in ``databricks/mlflow3_*.json`` were written by mlflow 3.17.2 itself
(``Trace.to_json()`` of a traced function), and the MLflow figures quoted below are what
``mlflow.genai.evaluate`` reported on the same trace with a judge answering as the stub does.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.integrations.mlflow_scorers import RetrievalGroundedness, RetrievalRelevance
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


# -- MLflow 3's result table ---------------------------------------------------------------

MLFLOW_TRACE_COLUMNS = ["trace", "client_request_id", "state", "request_time",
                        "execution_duration", "request", "response", "trace_metadata", "tags",
                        "spans", "assessments"]
"""The columns mlflow 3.17.2's ``result_df`` has after the ``/value`` ones, in its order
(printed by ``mlflow.genai.evaluate`` on a row of inputs, outputs and expectations)."""


def test_result_df_has_mlflow_3s_trace_columns() -> None:
    """After the scorers' and expectations' columns come MLflow 3's trace columns, in its
    order. A row answered from an MLflow trace keeps the trace's id, request time and
    metadata; the ``trace`` column is MLflow's trace JSON (mlflow 3.17.2's
    ``Trace.from_json`` reads these rows back), and assay reads it back as the same
    execution."""
    judge({"⟦resp⟧": "yes", "⟦o⟧": "no"})
    rows = [json.loads(line) for line in
            (DATA / "m01_answered_by_trace.jsonl").read_text(encoding="utf-8").splitlines()]
    rows.append({"request_id": "d", "inputs": {"question": "⟦d⟧ q"}, "outputs": "⟦o⟧ a",
                 "expectations": {"expected_response": "b"}})
    result = evaluate(rows, judges=["correctness"], naming="mlflow")
    table = by_id(result)
    columns = list(table["d"])
    assert columns[:2] == ["request_id", "trace_id"]
    start = columns.index("expected_response/value") + 1
    assert columns[start:start + len(MLFLOW_TRACE_COLUMNS)] == MLFLOW_TRACE_COLUMNS
    assert {"correctness/value", "correctness/rationale"} <= set(columns[:start])

    traced = table["p1"]
    original = trace_file("mlflow3_two_retrievers_trace.json")["info"]
    assert traced["trace_id"] == original["trace_id"]
    assert traced["state"] == "OK" and traced["client_request_id"] is None
    assert traced["request"] == "⟦p1⟧ capital of France?"
    assert traced["request_time"] == 1795706300184  # 2026-11-26T15:18:20.184Z
    assert traced["trace_metadata"]["mlflow.traceOutputs"] == '"⟦resp⟧ Paris"'
    assert [s["name"] for s in traced["spans"]] == ["agent", "search_a", "search_b"]
    feedback = next(a for a in traced["assessments"] if a["assessment_name"] == "correctness")
    assert feedback["feedback"] == {"value": "yes"} and feedback["rationale"] == "stub"
    assert feedback["source"] == {"source_type": "LLM_JUDGE", "source_id": "custom:stub"}
    again = assay.Execution(trace=traced["trace"])
    assert again.output == "⟦resp⟧ Paris" and again.latency_ms == 135

    plain = table["d"]
    assert plain["request"] == {"question": "⟦d⟧ q"} and plain["response"] == "⟦o⟧ a"
    (root,) = plain["spans"]
    assert root["name"] == "root_span"
    assert json.loads(root["attributes"]["mlflow.spanOutputs"]) == "⟦o⟧ a"
    assert plain["trace_id"].startswith("tr-") and len(plain["trace_id"]) == 35
    assert {a["assessment_name"] for a in plain["assessments"]} == \
        {"correctness", "expected_response"}
    assert assay.Execution(trace=plain["trace"]).output == "⟦o⟧ a"


# -- retrieval per row or per span ---------------------------------------------------------

SPAN_TABLE: dict[Any, Any] = {
    ("⟦resp⟧", "⟦sa-1⟧"): "yes", ("⟦resp⟧", "⟦sb-1⟧"): "no",  # groundedness, span by span
    ("⟦resp⟧", "⟦sa-1⟧", "⟦sb-1⟧"): "no",                      # groundedness, the whole row
    "⟦sa-1⟧": "yes", "⟦sa-2⟧": "no", "⟦sb-1⟧": "yes"}          # each chunk's relevance


def two_retrievers_row() -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in
            (DATA / "m01_answered_by_trace.jsonl").read_text(encoding="utf-8").splitlines()]
    return [r for r in rows if r["request_id"] == "p1"]


def test_retrieval_per_span_gives_mlflow_3s_numbers() -> None:
    """The trace has two top-level retriever spans: A (chunks yes, no; the answer grounded
    in it) and B (one chunk, yes; the answer not grounded in it). mlflow 3.17.2 reported
    retrieval_groundedness/mean 0.5, retrieval_relevance/precision/mean 0.75 ((1/2 + 1)/2)
    and retrieval_relevance/mean 0.667 (2 of 3 chunks) on this trace with these answers;
    ``retrieval_per="span"`` gives the same."""
    stub = judge(SPAN_TABLE)
    result = evaluate(two_retrievers_row(), naming="mlflow", retrieval_per="span",
                      scorers=[RetrievalGroundedness(), RetrievalRelevance()])
    m = result.metrics
    assert m["retrieval_groundedness/mean"] == 0.5
    assert m["retrieval_relevance/precision/mean"] == 0.75
    assert m["retrieval_relevance/mean"] == pytest.approx(2 / 3, abs=1e-12)
    row = result.rows()[0]
    assert row["retrieval_groundedness/value"] == "no"  # not grounded in every span's context
    spans = result.records[0].score_named("groundedness").details["spans"]  # type: ignore
    assert [s["rating"] for s in spans] == ["yes", "no"]
    assert stub.total == 5 and not stub.unmatched  # 2 groundedness + 3 chunks
    assert result.passed is False
    assert "span" in result.reason


def test_retrieval_per_row_is_the_default() -> None:
    """Per row (Databricks' way, the default): one groundedness question over both spans'
    documents, and each row's precision over all its chunks (2 of 3)."""
    stub = judge(SPAN_TABLE)
    result = evaluate(two_retrievers_row(), naming="mlflow",
                      scorers=[RetrievalGroundedness(), RetrievalRelevance()])
    m = result.metrics
    assert m["retrieval_groundedness/mean"] == 0.0
    assert m["retrieval_relevance/precision/mean"] == pytest.approx(2 / 3, abs=1e-12)
    assert stub.total == 4 and not stub.unmatched


def test_a_run_stored_before_a_setting_existed_compares_with_one_that_has_it(
        tmp_path: Path) -> None:
    """A run recorded by an older assay has no ``retrieval_per`` (nor any setting added
    since): it had the default, so comparing it with a new run is not refused as a change of
    verdict settings."""
    store = f"sqlite:///{tmp_path}/runs.db"
    rows = [{"request_id": f"r{i}", "request": f"⟦s{i}⟧ q", "response": "a"} for i in range(3)]
    judge({"⟦s": "yes"})
    old = evaluate(rows, judges=["safety"], naming="databricks", store=store)
    new = evaluate(rows, judges=["safety"], naming="databricks", store=store)
    with sqlite3.connect(tmp_path / "runs.db") as db:
        (config,) = db.execute("select config from runs where id = ?", (old.run_id,)).fetchone()
        recorded = json.loads(config)
        del recorded["run"]["retrieval_per"]
        db.execute("update runs set config = ? where id = ?", (json.dumps(recorded), old.run_id))
    comparison = assay.compare(old.run_id, new.run_id, store=store)
    assert not any("retrieval_per" in str(c.field) for c in comparison.config_diff
                   .run_config_changes)
