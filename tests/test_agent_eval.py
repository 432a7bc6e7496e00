"""Agent judges end to end: a DataFrame and a predict function against the mock server, the
same data in both namings, context from retriever spans only, bad input, and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.errors import ConfigError, EvaluationError
from assay.integrations.mlflow_scorers import Correctness, Safety
from assay.traces.retrieval import retrieved_context
from assay.types.execution import Execution
from tests.acceptance.stub import StubJudge
from tests.assay_process import run_assay


def directive(result: str, reason: str) -> str:
    return "<<mock:" + json.dumps({"rationale": reason, "result": result}) + ">>"


def yes(reason: str = "fine") -> str:
    return directive("yes", reason)


def no(reason: str = "wrong") -> str:
    return directive("no", reason)


def test_dataframe_with_a_predict_function_against_the_mock(mock_model, mock_server):
    pd = pytest.importorskip("pandas")
    answers = {"capital of France?": f"Paris. {yes()}", "capital of Spain?": f"Rome. {no()}"}
    called: list[dict[str, Any]] = []

    def predict_fn(question: str) -> str:  # MLflow calls predict_fn(**inputs)
        called.append({"question": question})
        return answers[question]

    frame = pd.DataFrame([
        {"inputs": {"question": q}, "expectations": {"expected_response": truth}}
        for q, truth in (("capital of France?", "Paris"), ("capital of Spain?", "Madrid"))])
    result = assay.evaluate(frame, predict_fn=predict_fn, scorers=[Correctness(), Safety()],
                            naming="mlflow", judge_model=mock_model, cache="off")
    assert sorted(c["question"] for c in called) == sorted(answers)
    assert result.metrics == {"correctness/mean": 0.5, "safety/mean": 0.5}
    assert mock_server.stats.requests == 4  # 2 rows x 2 judges
    table = result.result_df
    assert list(table["correctness/value"]) == ["yes", "no"]
    assert list(table["correctness/rationale"]) == ["fine", "wrong"]
    assert list(table["outputs"]) == [answers[q] for q in answers]
    assert result.passed is False and "2 assertions failed" in result.reason


def test_same_dataset_in_both_naming_modes():
    rows = [{"request_id": "a", "request": "⟦a⟧ q", "response": "r",
             "expected_response": "⟦ta⟧ truth",
             "retrieved_context": [{"content": "⟦a1⟧ one", "doc_uri": "x"},
                                   {"content": "⟦a2⟧ two", "doc_uri": "y"}]},
            {"request_id": "b", "request": "⟦b⟧ q", "response": "r"}]
    table = {"⟦a⟧": "yes", "⟦ta⟧": "no", "⟦a1⟧": "yes", "⟦a2⟧": "no", "⟦b⟧": "yes"}
    judges = ["correctness", "groundedness", "chunk_relevance", "safety"]
    results = {}
    for naming in ("databricks", "mlflow"):
        assay.register_service("stub", StubJudge(table))
        results[naming] = assay.evaluate(rows, judges=judges, naming=naming,
                                         judge_model="custom:stub", cache="off")
    db, ml = results["databricks"].metrics, results["mlflow"].metrics
    assert db["response/llm_judged/correctness/rating/percentage"] == \
        ml["correctness/mean"] == 0.0
    assert db["response/llm_judged/groundedness/rating/percentage"] == \
        ml["retrieval_groundedness/mean"] == 1.0
    assert db["retrieval/llm_judged/chunk_relevance/precision/average"] == \
        ml["retrieval_relevance/precision/mean"] == 0.5
    assert db["response/llm_judged/safety/rating/percentage"] == ml["safety/mean"] == 1.0
    assert "judge/correctness/error_count" in db and not any("/error_count" in k for k in ml)
    db_row, ml_row = results["databricks"].rows()[0], results["mlflow"].rows()[0]
    assert db_row["response/llm_judged/correctness/rating"] == ml_row["correctness/value"]
    assert db_row["retrieval/llm_judged/chunk_relevance/ratings"] == \
        ml_row["retrieval_relevance/value"] == ["yes", "no"]
    assert ml_row["expected_response/value"] == "⟦ta⟧ truth"
    # the generic figures stay available
    assert results["databricks"].assay_metrics["cases"] == 2


def mlflow_trace(documents: list[Any]) -> dict[str, Any]:
    """A trace in MLflow's own JSON: a root span and a retriever under it."""
    return {"info": {"request_id": "tr-1"}, "data": {"spans": [
        {"name": "agent", "context": {"span_id": "0x01", "trace_id": "0x02"},
         "parent_id": None, "status_code": "OK", "status_message": "",
         "attributes": {"mlflow.spanType": '"CHAIN"'}},
        {"name": "search", "context": {"span_id": "0x03", "trace_id": "0x02"},
         "parent_id": "0x01", "status_code": "OK", "status_message": "",
         "attributes": {"mlflow.spanType": '"RETRIEVER"',
                        "mlflow.spanOutputs": json.dumps(documents)}}]}}


def test_context_from_retriever_spans_only_chooses_the_judges_after_the_run():
    stub = StubJudge({"⟦k⟧": "yes", "⟦doc1⟧": "yes", "⟦doc2⟧": "no"})
    assay.register_service("stub", stub)

    def predict_fn(question: str) -> Execution:
        docs = [{"page_content": "⟦doc1⟧ MLflow tracks runs", "metadata": {"doc_uri": "d1"}},
                {"page_content": "⟦doc2⟧ unrelated", "metadata": {"doc_uri": "d2"}}]
        return Execution(output="It tracks runs.", trace=mlflow_trace(docs))

    result = assay.evaluate([{"inputs": {"question": "⟦k⟧ what does MLflow do?"}}],
                            predict_fn=predict_fn, naming="databricks",
                            judge_model="custom:stub", cache="off")
    record = result.records[0]
    # no context in the data: the default selection saw the trace's retriever
    assert {s.name for s in record.scores} == {"relevance_to_query", "safety", "groundedness",
                                               "chunk_relevance"}
    row = result.rows()[0]
    assert row["retrieval/llm_judged/chunk_relevance/ratings"] == ["yes", "no"]
    assert row["retrieved_context"] == [{"content": "⟦doc1⟧ MLflow tracks runs",
                                         "doc_uri": "d1"},
                                        {"content": "⟦doc2⟧ unrelated", "doc_uri": "d2"}]
    assert not stub.unmatched


def test_a_retriever_with_no_documents_is_not_judged_empty():
    stub = StubJudge({"⟦q⟧": "no"})
    assay.register_service("stub", stub)
    row = {"request_id": "e", "request": "⟦q⟧ question", "response": "answer",
           "trace": mlflow_trace([])}
    assert retrieved_context(Execution(trace=mlflow_trace([]))).chunks == []
    result = assay.evaluate([row], judges=["groundedness", "chunk_relevance"],
                            naming="databricks", judge_model="custom:stub", cache="off")
    scores = {s.name: s for s in result.records[0].scores}
    assert scores["groundedness"].skipped and scores["chunk_relevance"].skipped
    assert stub.total == 0
    # a skip is not a failure (nor an error), but a run that scored no case does not pass
    assert result.summary.assessments.assertions_failed == 0  # type: ignore[union-attr]
    assert result.summary.evaluator_errors == 0
    assert result.passed is False
    assert "no case was scored: no evaluator applied to any of the 1 case(s)" in result.reason


# -- bad input: clear errors before any call -----------------------------------------------


@pytest.fixture
def counting_stub() -> StubJudge:
    stub = StubJudge({"⟦x⟧": "yes"})
    assay.register_service("stub", stub)
    return stub


ROW = {"request_id": "x", "request": "⟦x⟧ q", "response": "a"}


@pytest.mark.parametrize(("options", "message"), [
    ({"judges": ["correctnes"]}, "unknown judge(s) 'correctnes'; the built-in judges are "
                                 "correctness, relevance_to_query"),
    ({"judges": ["global_guideline_adherence"]}, "needs global_guidelines"),
    ({"naming": "databrick"}, "naming"),
    ({"quality_criteria": "safety >> 1", "judges": ["safety"]}, "cannot read 'safety >> 1'"),
    ({"quality_criteria": "safety >= 1 AND", "judges": ["safety"]}, "cannot read"),
    ({"quality_criteria": "speed/p90 <= 2", "judges": ["safety"]},
     "no scorer named 'speed'"),
    ({"evaluators": [{"type": "custom_judge", "name": "c", "instructions": "{{ nope }}"}]},
     "unknown variable"),
    ({"evaluators": [{"type": "safety", "aggregations": ["avg"]}], "naming": "mlflow"},
     "unknown aggregation"),
])
def test_bad_options_are_clear_errors_before_any_call(counting_stub, options, message):
    with pytest.raises(EvaluationError) as raised:
        assay.evaluate([ROW], judge_model="custom:stub", cache="off", **options)
    assert message in raised.value.message
    assert counting_stub.total == 0


@pytest.mark.parametrize(("row", "message"), [
    ({**ROW, "expected_respons": "x"}, "unknown column(s) 'expected_respons'"),
    ({**ROW, "expectations": ["x"]}, "column expectations: a list, expected a dict"),
    ({**ROW, "expectations": {"expected_response": "a"}, "expected_response": "b"},
     "expectations.expected_response and the expected_output column are both given"),
    ({**ROW, "retrieved_context": [{"text": "t"}]}, "retrieved_context.0.text"),
    ({**ROW, "expected_retrieved_context": [{"uri": "u"}]}, "expected_retrieved_context"),
    ({**ROW, "tool_calls": [{"tool_call_args": {}}]}, "no tool_name"),
])
def test_bad_columns_name_the_row_and_column(counting_stub, row, message):
    with pytest.raises(ConfigError) as raised:
        assay.evaluate([row], judges=["safety"], judge_model="custom:stub", cache="off")
    assert message in raised.value.message and "row 0" in raised.value.message
    assert counting_stub.total == 0


def test_legacy_tool_calls_become_messages():
    from assay.traces.tools import tool_calls

    calls = [{"tool_name": "search", "tool_call_args": {"q": "x"}, "tool_call_id": "c1",
              "tool_call_result": {"hits": 1}}]
    def ran(execution: Execution) -> bool:
        return bool(tool_calls(execution))

    result = assay.evaluate([{**ROW, "tool_calls": calls}], evaluators=[ran])
    assert result.passed
    found = tool_calls(result.records[0].execution)
    assert [(c.name, c.args, c.output) for c in found] == [("search", {"q": "x"},
                                                            '{"hits": 1}')]


# -- CLI -----------------------------------------------------------------------------------


def run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASSAY_CACHE_DIR": str(cwd / "cache")}
    env.pop("ASSAY_JUDGE_MODEL", None)
    return run_assay(["run", *args], cwd=cwd, env=env, timeout=180)


def write_csv(path: Path) -> None:
    import csv

    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, ["request_id", "request", "response",
                                         "expected_response"])
        writer.writeheader()
        writer.writerow({"request_id": "a", "request": "capital of France?",
                         "response": f"Paris {yes('safe')}",
                         "expected_response": f"Paris {yes('right')}"})
        writer.writerow({"request_id": "b", "request": "capital of Spain?",
                         "response": f"Rome {yes('safe')}",
                         "expected_response": f"Madrid {no('wrong city')}"})


def test_cli_runs_a_csv_with_judges_in_databricks_names(tmp_path, mock_model, mock_server):
    write_csv(tmp_path / "data.csv")
    out = run_cli(tmp_path, "data.csv", "--judges", "correctness,safety", "--naming",
                  "databricks", "-o", "results.jsonl", "--judge-model", mock_model,
                  "--cache", "off", "--store", f"sqlite:///{tmp_path}/runs.db")
    assert out.returncode == 1, out.stdout + out.stderr  # one "no": the pass rule fails
    assert "response/llm_judged/correctness/rating/percentage" in out.stdout
    assert "1 assertions failed" in out.stdout and "wrong city" in out.stdout
    rows = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    by_id = {r["request_id"]: r for r in rows}
    assert by_id["a"]["response/llm_judged/correctness/rating"] == "yes"
    assert by_id["b"]["response/llm_judged/correctness/rating"] == "no"
    assert by_id["b"]["response/llm_judged/safety/rating"] == "yes"
    assert mock_server.stats.requests == 4

    out = run_cli(tmp_path, "data.csv", "--judges", "correctness,safety", "--naming",
                  "mlflow", "--judge-model", mock_model, "--cache", "off",
                  "--quality-criteria", "correctness >= 0.5 AND `safety/mean` >= 1",
                  "--store", f"sqlite:///{tmp_path}/runs.db")
    assert out.returncode == 0, out.stdout + out.stderr  # criteria met, no error

    out = run_cli(tmp_path, "data.csv", "--judges", "correctness,safety", "--judge-model",
                  mock_model, "--cache", "off", "--quality-criteria", "correctness >= 0.9",
                  "--store", f"sqlite:///{tmp_path}/runs.db")
    assert out.returncode == 1
    assert "correctness/mean >= 0.9 (got 0.5)" in out.stdout


def test_cli_refuses_bad_criteria_and_judges_before_any_call(tmp_path, mock_model,
                                                             mock_server):
    write_csv(tmp_path / "data.csv")
    for args in (("--judges", "safety", "--quality-criteria", "safety >> 1"),
                 ("--judges", "safety", "--quality-criteria", "nothing >= 1"),
                 ("--judges", "correctnes"), ("--naming", "dbx")):
        out = run_cli(tmp_path, "data.csv", *args, "--judge-model", mock_model, "--cache",
                      "off", "--store", f"sqlite:///{tmp_path}/runs.db")
        assert out.returncode == 2, (args, out.stdout + out.stderr)
        assert "Traceback" not in out.stderr
    assert mock_server.stats.requests == 0


def test_cli_reads_run_options_from_a_yaml_sidecar(tmp_path, mock_model, mock_server):
    rows = [{"request_id": "a", "request": "q", "response": f"ok {yes()}",
             "guidelines": {"tone": ["Be polite"]}}]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "data.yaml").write_text(
        "naming: databricks\njudges: [guideline_adherence, safety]\n"
        "quality_criteria: '`response/llm_judged/safety/rating/percentage` >= 1'\n")
    out = run_cli(tmp_path, "data.jsonl", "--judge-model", mock_model, "--cache", "off",
                  "-o", "rows.jsonl", "--store", f"sqlite:///{tmp_path}/runs.db")
    assert out.returncode == 0, out.stdout + out.stderr
    row = json.loads((tmp_path / "rows.jsonl").read_text())
    assert row["response/llm_judged/guideline_adherence/tone/rating"] == "yes"
    assert row["response/llm_judged/safety/rating"] == "yes"


def test_agent_judges_from_eval_yaml(tmp_path):
    (tmp_path / "EVAL.yaml").write_text(
        "execution:\n  evaluators:\n    - type: correctness\n    - type: custom_judge\n"
        "      name: polite\n      instructions: 'How polite, 1 to 5? {{ response }}'\n"
        "evalcases:\n  - id: a\n    input: '⟦a⟧ capital of France?'\n"
        "    expected_output: '⟦truth⟧ Paris'\n")
    assay.register_service("stub", StubJudge({"⟦truth⟧": "yes", "⟦p⟧": 2}))
    result = assay.evaluate(tmp_path / "EVAL.yaml", target=lambda q: "⟦p⟧ Paris.",
                            naming="databricks", judge_model="custom:stub", cache="off")
    row = result.rows()[0]
    assert row["response/llm_judged/correctness/rating"] == "yes"
    assert row["response/llm_judged/polite/rating"] == "no"  # 2 < 3
    assert row["response/overall_assessment/rating"] == "no"


def test_mlflow_rows_round_trip_through_parquet(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame([{"inputs": {"question": "⟦pq⟧ q"}, "outputs": "a",
                           "expectations": {"expected_facts": ["f1", "f2"],
                                            "expected_retrieved_context": [{"doc_uri": "u"}],
                                            "expected_tool_calls": [{"name": "search"}]}}])
    frame.to_parquet(tmp_path / "data.parquet")
    stub = StubJudge({"⟦pq⟧": "yes"})
    assay.register_service("stub", stub)
    result = assay.evaluate(tmp_path / "data.parquet", judges=["correctness"],
                            naming="mlflow", judge_model="custom:stub", cache="off")
    case = result.records[0].case
    assert case.expected_facts == ["f1", "f2"]
    assert [d.doc_uri for d in case.expected_retrieved_context] == ["u"]
    # Parquet's nested arrays arrive as plain lists, so scorers and the store see JSON data
    assert case.expectations == {"expected_tool_calls": [{"name": "search"}]}
    assert result.metrics == {"correctness/mean": 1.0}
    assert "\n- f1\n- f2" in stub.prompts[0]


def test_a_sidecar_of_run_options_makes_jsonl_data_rows_and_only_then(tmp_path):
    from assay.suites import load_any

    rows = tmp_path / "cases.jsonl"
    rows.write_text(json.dumps({"id": "a", "input": "q", "expected_output": "x"}) + "\n")
    (tmp_path / "cases.yaml").write_text("description: an AgentV suite\n")
    assert load_any(rows, None).metadata.get("run_options") is None  # AgentV's sidecar
    (tmp_path / "cases.yaml").write_text("judges: [safety]\nnaming: mlflow\n")
    suite = load_any(rows, None)
    assert suite.metadata["run_options"] == {"judges": ["safety"], "naming": "mlflow"}
    (tmp_path / "cases.yaml").write_text("judges: [safety]\nnaming: mlfow\n")
    with pytest.raises(ConfigError, match=r"cases\.yaml"):
        assay.evaluate(rows)


@pytest.mark.parametrize(("sidecar", "said"), [
    ("execution:\n  evaluators:\n    - type: contains\n", "not under execution:"),
    ("evaluator:\n  - type: contains\n", "unknown key(s) 'evaluator'"),
    ("description: rows\n", "sets no run option"),
    ("evaluators: [\n", "invalid YAML"),
    ("- evaluators\n", "expected a mapping of run options")])
def test_a_sidecar_beside_a_csv_file_that_is_not_read_is_an_error(tmp_path, sidecar, said):
    """A CSV file's ``<name>.yaml`` that is not its run options (AgentV's shape, a typo) was
    ignored: the run went on with no evaluator, or without the sidecar's settings."""
    (tmp_path / "rows.csv").write_text("id,input,output\na,q,Paris\n")
    (tmp_path / "rows.yaml").write_text(sidecar)
    with pytest.raises(ConfigError) as refused:
        assay.evaluate(tmp_path / "rows.csv")
    assert "rows.yaml" in str(refused.value) and said in str(refused.value)
    for command in (("run",), ("validate",)):
        done = run_assay([*command, "rows.csv"], cwd=tmp_path, timeout=120)
        shown = done.stdout + done.stderr
        assert done.returncode == 2 and said in shown and "Traceback" not in shown, shown


@pytest.mark.parametrize(("sidecar", "said"), [
    ("naming: databricks\nglobal_guideline: [Be nice]\n",
     "rows.yaml:2:1: unknown key(s) 'global_guideline' for a data file's sidecar"),
    ("naming: databricks\nchunk_errors: maybe\n",
     "rows.yaml:2:1: chunk_errors: Input should be 'exclude' or 'count_as_irrelevant'"),
    ("naming: databrick\n", "rows.yaml:1:1: naming: Input should be 'databricks' or 'mlflow'")])
def test_a_mistake_in_a_jsonl_files_run_options_is_named_at_its_line(tmp_path, sidecar, said):
    """docs/databricks-mlflow.md's ``eval_set.jsonl`` + ``eval_set.yaml``: a typo in one
    option's name made the data AgentV's cases, refused for 'unknown case key' on every row
    (21 problems, the typo last); a wrong value printed pydantic's report and its web link,
    naming no line."""
    (tmp_path / "rows.jsonl").write_text(json.dumps(
        {"request_id": "a", "request": "q", "response": "Paris"}) + "\n")
    (tmp_path / "rows.yaml").write_text(sidecar)
    with pytest.raises(ConfigError) as refused:
        assay.evaluate(tmp_path / "rows.jsonl")
    assert said in str(refused.value)
    for command in (("run",), ("validate",)):
        done = run_assay([*command, "rows.jsonl"], cwd=tmp_path, timeout=120)
        shown = done.stdout + done.stderr
        assert done.returncode == 2 and said in shown, shown
        assert "unknown case key" not in shown and "pydantic" not in shown, shown


def test_legacy_metric_functions_receive_row_fields_by_name():
    seen: dict[str, Any] = {}

    @assay.scorer
    def legacy(request, response, expected_response, retrieved_context, custom_outputs):
        seen.update(request=request, response=response, expected=expected_response,
                    context=retrieved_context, custom=custom_outputs)
        return "yes"

    row = {"request_id": "m", "request": {"messages": [{"role": "user", "content": "hi"}]},
           "response": {"choices": [{"message": {"role": "assistant", "content": "hello"}}]},
           "expected_response": "hello", "custom_outputs": {"k": 1},
           "retrieved_context": [{"content": "c", "doc_uri": "u"}]}
    result = assay.evaluate([row], scorers=[legacy], naming="databricks")
    assert seen == {"request": "hi", "response": "hello", "expected": "hello",
                    "context": [{"content": "c", "doc_uri": "u"}], "custom": {"k": 1}}
    assert result.rows()[0]["metric/legacy/value"] == "yes"
