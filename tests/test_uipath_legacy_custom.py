"""UiPath's legacy evaluators (Contains, Regex, CSVColumnExactMatch, ContextPrecision,
Faithfulness) and custom coded evaluators (``file://x.py:Class``), loaded from UiPath project
files and scored by hand-computed rules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.errors import EvaluationError
from assay.judges import EvalContext, build
from assay.llm import register_service
from assay.suites.uipath import load_eval_set
from assay.types.case import Case
from assay.types.execution import Execution

CUSTOM = Path(__file__).parent / "data" / "uipath_custom"


def legacy_project(tmp_path: Path, evaluators: dict[str, dict[str, Any]],
                   items: list[dict[str, Any]]) -> Path:
    """A legacy UiPath project: evaluator files by id, one legacy eval set."""
    directory = tmp_path / "evaluations" / "evaluators"
    directory.mkdir(parents=True)
    for ident, data in evaluators.items():
        (directory / f"{ident}.json").write_text(json.dumps({"id": ident, **data}))
    sets = tmp_path / "evaluations" / "eval-sets"
    sets.mkdir()
    path = sets / "legacy.json"
    path.write_text(json.dumps({"fileName": "legacy.json", "id": "set",
                                "evaluatorRefs": list(evaluators), "evaluations": items}))
    return path


def run(path: Path, outputs: dict[str, Any], **options: Any) -> dict[str, Any]:
    """Scores by (case id, evaluator id) of a run whose agent answers ``outputs[case]``."""
    result = assay.evaluate(path, target=lambda inputs: outputs[inputs["case"]], **options)
    return {(r.case_id, s.name): s for r in result.records for s in r.scores}


# -- legacy deterministic evaluators ----------------------------------------------


def test_legacy_contains_and_regex(tmp_path):
    path = legacy_project(tmp_path, {
        "LegacyContains": {"category": 0, "type": 2},
        "LegacyRegex": {"category": 0, "type": 3}},
        [{"id": "phone", "inputs": {"case": "phone"}, "expectedOutput": "555-1234"},
         {"id": "pattern", "inputs": {"case": "pattern"}, "expectedOutput": r"\d{3}-\d{4}"}])
    scores = run(path, {"phone": "Call 555-1234 today", "pattern": "Call 555-12 today"})
    # Contains: the expected output is the search text; Regex: it is the pattern.
    assert scores[("phone", "LegacyContains")].value == 1.0
    assert scores[("pattern", "LegacyContains")].value == 0.0   # "\d{3}-\d{4}" is not in it
    assert scores[("phone", "LegacyRegex")].value == 1.0        # "555-1234" matches itself
    assert scores[("pattern", "LegacyRegex")].value == 0.0      # 555-12 has 2 digits, not 4


def test_legacy_contains_and_regex_take_the_object_a_legacy_eval_set_requires(tmp_path):
    # A legacy eval set's expectedOutput is an object (UiPath's LegacyEvaluationItem requires
    # it): the text is its value at the evaluator's targetOutputKey, else its only value.
    path = legacy_project(tmp_path, {
        "KeyedContains": {"category": 0, "type": 2, "targetOutputKey": "answer"},
        "LegacyRegex": {"category": 0, "type": 3}},
        [{"id": "paris", "name": "Paris", "inputs": {"case": "paris"},
          "expectedOutput": {"answer": "Paris"}, "evalSetId": "set",
          "createdAt": "2025-01-01T00:00:00Z", "updatedAt": "2025-01-01T00:00:00Z"},
         {"id": "code", "name": "Code", "inputs": {"case": "code"},
          "expectedOutput": {"answer": r"\bA-\d+\b"}, "evalSetId": "set",
          "createdAt": "2025-01-01T00:00:00Z", "updatedAt": "2025-01-01T00:00:00Z"}])
    scores = run(path, {"paris": {"answer": "It is Paris.", "debug": "x"},
                        "code": {"answer": "Order A-17 shipped"}})
    assert scores[("paris", "KeyedContains")].value == 1.0  # "Paris" in the answer
    assert scores[("code", "KeyedContains")].value == 0.0   # the pattern is not in it
    assert scores[("code", "LegacyRegex")].value == 1.0     # A-17 matches \bA-\d+\b
    assert scores[("paris", "LegacyRegex")].value == 1.0


@pytest.mark.parametrize("evaluator, expected, problem", [
    ({"category": 0, "type": 2, "targetOutputKey": "answer"}, {"reply": "x"},
     "looks for its text at targetOutputKey 'answer', which expectedOutput lacks (keys: "
     "'reply')"),
    ({"category": 0, "type": 3}, {"a": "x", "b": "y"},
     "needs one text, and expectedOutput has 2 keys ('a', 'b'); give the evaluator a "
     "targetOutputKey"),
    ({"category": 0, "type": 2}, {"a": ["x"]}, "expected text to search for, got list"),
])
def test_an_object_expected_output_without_one_text_is_a_located_error(
        tmp_path, evaluator, expected, problem):
    path = legacy_project(tmp_path, {"Legacy": evaluator},
                          [{"id": "p", "inputs": {}, "expectedOutput": expected}])
    with pytest.raises(EvaluationError) as info:
        load_eval_set(path)
    assert "$.evaluations[0].evaluationCriterias.Legacy" in info.value.message
    assert problem in info.value.message


def test_legacy_regex_bad_pattern_is_a_located_error(tmp_path):
    path = legacy_project(tmp_path, {"LegacyRegex": {"category": 0, "type": 3}},
                          [{"id": "p", "inputs": {}, "expectedOutput": "(unclosed"}])
    with pytest.raises(EvaluationError) as info:
        load_eval_set(path)
    assert "$.evaluations[0].evaluationCriterias.LegacyRegex" in info.value.message
    assert "'(unclosed' is not a regular expression" in info.value.message


CSV_EXPECTED = "name,total,date\nAnn,10,2024-01-01\nBob,7,2024-01-02\nCid,3,2024-01-03"


@pytest.mark.parametrize("actual, value", [
    ("Name,Total,Date\nAnn, 10 ,2024-02-02", 1.0),    # headers any case, values trimmed
    ("name,total\nAnn,11", 0.0),                      # total differs
    ({"content": "name,total\nAnn,10"}, 1.0),         # a dict's content is the CSV
])
async def test_csv_column_exact_match(actual, value, engine_factory):
    judge = build({"type": "csv_exact_match", "targetSubOutputKey": "name, total"})
    score = await judge.evaluate(Case(id="c", expected_output=CSV_EXPECTED),
                                 Execution(output=actual), EvalContext(engine_factory()))
    assert score.value == value


async def test_csv_problems_are_errors_and_rows_compare_line_by_line(engine_factory):
    judge = build({"type": "csv_exact_match", "columns": "name,total"})
    missing = await judge.evaluate(Case(id="c", expected_output=CSV_EXPECTED),
                                   Execution(output="name,date\nAnn,2024"),
                                   EvalContext(engine_factory()))
    assert missing.error is not None and missing.error.code == "invalid_actual_output"
    assert "lacks column(s) total" in missing.error.message
    rows = build({"type": "csv_exact_match", "columns": "name,total",
                  "line_by_line": True})
    score = await rows.evaluate(Case(id="c", expected_output=CSV_EXPECTED), Execution(
        output="name,total,date\nAnn,10,x\nBob,8,x\nCid,3,x"), EvalContext(engine_factory()))
    assert score.value == pytest.approx(2 / 3)  # Bob's total differs
    assert [line["value"] for line in score.details["lines"]] == [1.0, 0.0, 1.0]


def test_legacy_csv_type_loads_with_its_columns(tmp_path):
    path = legacy_project(tmp_path, {"LegacyCsv": {"category": 0, "type": 10,
                                                   "targetSubOutputKey": "name,total"}},
                          [{"id": "csv", "inputs": {"case": "csv"},
                            "expectedOutput": CSV_EXPECTED}])
    scores = run(path, {"csv": "name,total\nAnn,10"})
    assert scores[("csv", "LegacyCsv")].value == 1.0


# -- legacy retrieval judges --------------------------------------------------------


def retriever_span(query: str, documents: list[str], span_id: str) -> dict[str, Any]:
    return {"name": "retrieve", "span_id": span_id, "attributes": {
        "openinference.span.kind": "RETRIEVER", "input.value": query,
        "output.value": json.dumps({"documents": [{"content": d} for d in documents]})}}


def scripted(name: str, answers: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """A registered service answering ``answers`` in turn; returns its model and requests."""
    seen: list[dict[str, Any]] = []

    async def service(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        answer = answers[min(len(seen) - 1, len(answers) - 1)]
        return {"choices": [{"message": {"role": "assistant", "content": json.dumps(answer)}}]}

    return register_service(name, service), seen


async def test_context_precision_means_chunks_then_retrievals(engine_factory):
    model, seen = scripted("precision", [
        {"relevances": [{"relevance": 90}, {"relevance": 10}]},   # retrieval 1: mean 50
        {"relevances": [{"relevance": 80}]}])                      # retrieval 2: mean 80
    trace = [retriever_span("capital of France", ["Paris is the capital.", "Bananas."], "a"),
             retriever_span("population of Paris", ["About 2.1 million people."], "b")]
    score = await build({"type": "context_precision", "model": model}).evaluate(
        Case(id="c", input="q"), Execution(output="Paris", trace=trace),
        EvalContext(engine_factory(cache_mode="off")))
    assert score.raw == pytest.approx(65.0) and score.value == pytest.approx(0.65)
    assert [r["mean"] for r in score.details["retrievals"]] == [50.0, 80.0]
    assert len(seen) == 2 and "Bananas." in seen[0]["messages"][1]["content"]
    schema = seen[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["relevances"]["minItems"] == 2


async def test_retrieval_judges_without_context_do_not_apply(engine_factory):
    for kind in ("context_precision", "faithfulness"):
        score = await build({"type": kind}).evaluate(
            Case(id="c", input="q"), Execution(output="Paris"), EvalContext(engine_factory()))
        assert score.skipped is not None and score.value is None and score.error is None


async def test_faithfulness_counts_grounded_claims(engine_factory):
    model, seen = scripted("faithful", [
        {"claims": ["Paris is the capital of France.", "Paris has 10 million residents."]},
        {"verdicts": [{"supported_by": [1]},                            # grounded
                      {"supported_by": [1], "contradicted_by": [2]}]}])  # contradicted
    trace = [retriever_span("paris", ["Paris is the capital of France.",
                                      "Paris has about 2.1 million residents."], "a")]
    score = await build({"type": "faithfulness", "model": model}).evaluate(
        Case(id="c", input="q"), Execution(output="Paris is the capital; 10M live there.",
                                           trace=trace),
        EvalContext(engine_factory(cache_mode="off")))
    assert score.raw == 50.0 and score.value == 0.5
    assert score.hits == ["Paris is the capital of France."]
    stance_schema = seen[1]["response_format"]["json_schema"]["schema"]
    item = stance_schema["$defs"]["ClaimVerdict"]["properties"]["supported_by"]["items"]
    assert item["maximum"] == 2  # two sources: a source 3 is invalid and would be re-asked


async def test_faithfulness_without_claims_is_faithful(engine_factory):
    model, _ = scripted("no-claims", [{"claims": []}])
    score = await build({"type": "faithfulness", "model": model}).evaluate(
        Case(id="c", input="q"), Execution(output="Hello!", trace=[
            retriever_span("q", ["doc"], "a")]), EvalContext(engine_factory(cache_mode="off")))
    assert score.value == 1.0 and score.usage.calls == 1


def test_legacy_retrieval_types_load(tmp_path):
    path = legacy_project(tmp_path, {
        "Precision": {"category": 1, "type": 8, "model": "same-as-agent"},
        "Faithful": {"category": 1, "type": 9}}, [{"id": "q", "inputs": {}}])
    types = {e.name: e.type for e in load_eval_set(path).cases[0].evaluators or []}
    assert types == {"Precision": "context_precision", "Faithful": "faithfulness"}


# -- custom coded evaluators ---------------------------------------------------------


@pytest.fixture
def custom_project(tmp_path: Path) -> Path:
    shutil.copytree(CUSTOM, tmp_path / "project")
    return tmp_path / "project"


def test_custom_evaluator_runs_through_the_registry(custom_project):
    eval_set = custom_project / "evaluations" / "eval-sets" / "geography.json"
    suite = load_eval_set(eval_set)
    evaluator = suite.cases[0].evaluators[0]  # type: ignore[index]
    assert evaluator.type == "uipath_custom" and evaluator.name == "KeywordOverlapEvaluator"
    result = assay.evaluate(eval_set, target=lambda inputs: {"answer": "Paris is the capital"})
    scores = {r.case_id: r.scores[0] for r in result.records}
    # {paris, is, the, capital} vs {paris, capital}: 2 shared of 4 -> 0.5
    assert scores["france"].value == 0.5
    # null criteria: the config's defaultEvaluationCriteria {paris}: 1 of 4 -> 0.25
    assert scores["defaults"].value == 0.25
    assert scores["france"].details == {"expected": "['capital', 'paris']",
                                        "actual": "['capital', 'is', 'paris', 'the']"}
    # The stored spec rebuilds through the registry (rescore).
    again = assay.rescore(result.run_id, store=result.store)
    assert {r.case_id: r.scores[0].value for r in again.records} == {"france": 0.5,
                                                                     "defaults": 0.25}


def _custom_file(project: Path) -> Path:
    return project / "evaluations" / "evaluators" / "custom" / "keyword_overlap.py"


@pytest.mark.parametrize("edit, message", [
    (lambda text: text.replace("from assay.integrations.uipath.evaluators import (",
                               "from uipath.eval.evaluators import ("),
     "change 'uipath.eval' to 'assay.integrations.uipath'"),
    (lambda text: text.replace("class KeywordOverlapEvaluator(\n    BaseEvaluator[",
                               "class KeywordOverlapEvaluator(\n    dict, BaseEvaluator["),
     None),
    (lambda text: text.replace("class KeywordOverlapEvaluator(", "class Renamed("),
     "class 'KeywordOverlapEvaluator' not found"),
    (lambda text: text + "\n\nclass KeywordOverlapEvaluator:\n    pass\n",
     "is not a subclass of assay.integrations.uipath.evaluators.BaseEvaluator"),
    (lambda text: text.replace('return "KeywordOverlapEvaluator"', 'return "Other"'),
     "declares evaluatorTypeId 'KeywordOverlapEvaluator' but"),
])
def test_a_class_that_does_not_fit_is_a_clear_error(custom_project, edit, message):
    path = _custom_file(custom_project)
    path.write_text(edit(path.read_text()))
    with pytest.raises(EvaluationError) as info:
        load_eval_set(custom_project / "evaluations" / "eval-sets" / "geography.json")
    assert "$.evaluations[0].evaluationCriterias.KeywordOverlapEvaluator" in info.value.message
    if message:
        assert message in info.value.message
    assert "Traceback" not in info.value.message


@pytest.mark.parametrize("how", ["parent", "absolute", "link", "type file"])
def test_a_custom_evaluator_file_outside_the_evaluators_folder_is_refused_unless_allowed(
        custom_project, monkeypatch, how):
    """``file://../../x.py`` (or an absolute path, or a link out of the folder) would run a
    file from anywhere on the machine as an evaluator: an error naming the evaluator file,
    the field and the way to allow it; with ASSAY_ALLOW_OUTSIDE_FILES=1 it runs."""
    monkeypatch.delenv("ASSAY_ALLOW_OUTSIDE_FILES", raising=False)
    evaluators = custom_project / "evaluations" / "evaluators"
    elsewhere = custom_project.parent / "elsewhere"
    elsewhere.mkdir()
    moved = elsewhere / ("types.json" if how == "type file" else "keyword_overlap.py")
    inside = evaluators / "custom" / ("types/keyword-overlap-evaluator-types.json"
                                      if how == "type file" else "keyword_overlap.py")
    inside.rename(moved)
    ref = {"parent": "../../../elsewhere/keyword_overlap.py", "absolute": str(moved),
           "link": "keyword_overlap.py", "type file": "../../../elsewhere/types.json"}[how]
    if how == "link":
        inside.symlink_to(moved)
    definition = evaluators / "keyword-overlap-evaluator.json"
    key = "evaluatorTypeId" if how == "type file" else "evaluatorSchema"
    data = json.loads(definition.read_text())
    data[key] = f"file://{ref}" + ("" if how == "type file" else ":KeywordOverlapEvaluator")
    definition.write_text(json.dumps(data))
    eval_set = custom_project / "evaluations" / "eval-sets" / "geography.json"
    with pytest.raises(EvaluationError) as info:
        load_eval_set(eval_set)
    assert f"{definition}: $.{key}: file://{ref} is outside the suite's folder {evaluators}" \
        in info.value.message
    assert "set ASSAY_ALLOW_OUTSIDE_FILES=1 to allow" in info.value.message
    monkeypatch.setenv("ASSAY_ALLOW_OUTSIDE_FILES", "1")
    result = assay.evaluate(eval_set, target=lambda inputs: {"answer": "Paris is the capital"})
    assert {r.case_id: r.scores[0].value for r in result.records}["france"] == 0.5


def test_missing_file_and_type_file(custom_project):
    evaluators = custom_project / "evaluations" / "evaluators"
    (evaluators / "custom" / "types" / "keyword-overlap-evaluator-types.json").unlink()
    with pytest.raises(EvaluationError, match=r"type file .*keyword-overlap-evaluator-types\.json "
                       "not found"):
        load_eval_set(custom_project / "evaluations" / "eval-sets" / "geography.json")
    _custom_file(custom_project).unlink()
    with pytest.raises(EvaluationError, match=r"custom evaluator file .*keyword_overlap\.py not "
                       "found"):
        load_eval_set(custom_project / "evaluations" / "eval-sets" / "geography.json")


def test_a_score_outside_zero_to_one_is_an_error(custom_project):
    path = _custom_file(custom_project)
    path.write_text(path.read_text().replace("score=score,", "score=score * 100,"))
    eval_set = custom_project / "evaluations" / "eval-sets" / "geography.json"
    result = assay.evaluate(eval_set, target=lambda inputs: {"answer": "Paris is the capital"})
    score = result.records[0].scores[0]
    assert score.value is None and score.error is not None
    assert score.error.code == "invalid_score" and "50.0" in score.error.message
