"""UiPath project files in (evaluators, eval sets, legacy shapes) and UiPath's output file out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from assay.errors import EvaluationError
from assay.judges import EvalContext
from assay.report.uipath_output import evaluator_result, render_for_suite, write_uipath_output
from assay.suites import Suite
from assay.suites.uipath import (
    find_eval_sets,
    load_eval_set,
    load_uipath,
    looks_like_uipath,
    snake_case,
)
from assay.types.execution import Execution
from assay.types.score import Score, ScoreError
from assay.types.spans import Span

PROJECT = Path(__file__).parent / "data" / "uipath_project"
SETS = PROJECT / "evaluations" / "eval-sets"


def _by_name(suite: Suite, case_id: str) -> dict[str, Any]:
    item = next(c for c in suite.cases if c.case.id == case_id)
    assert item.evaluators is not None
    return {e.name: e for e in item.evaluators}


@pytest.fixture
def calculator() -> Suite:
    return load_eval_set(SETS / "calculator.json")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A writable copy of the sample project, for the error cases."""
    shutil.copytree(PROJECT, tmp_path / "project")
    return tmp_path / "project"


def _edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


# -- the sample project -----------------------------------------------------------------------


def test_eval_set_becomes_a_suite_with_per_case_evaluators(calculator):
    assert calculator.name == "Calculator"
    assert calculator.source == SETS / "calculator.json"
    assert [c.case.id for c in calculator.cases] == ["add", "multiply", "add-again"]
    assert calculator.evaluators == []
    add = calculator.cases[0]
    assert add.case.input == {"a": 3, "b": 5, "operator": "+"}
    assert add.case.metadata["name"] == "Add two numbers"
    assert add.case.metadata["simulation_instructions"] == "The add tool returns the sum."
    # absent ids are skipped; the eval set's order is kept
    assert list(_by_name(calculator, "add")) == [
        "ExactMatchEvaluator", "ContainsEvaluator", "SemanticEvaluator",
        "StrictJsonEvaluator", "TrajectoryEvaluator", "ToolOrderEvaluator"]
    assert list(_by_name(calculator, "multiply")) == [
        "ExactMatchEvaluator", "TrajectoryEvaluator", "ClassificationEvaluator"]
    assert list(_by_name(calculator, "add-again")) == ["ExactMatchEvaluator"]


def test_types_and_config_are_mapped(calculator):
    evaluators = _by_name(calculator, "add")
    assert {n: e.type for n, e in evaluators.items()} == {
        "ExactMatchEvaluator": "exact_match", "ContainsEvaluator": "contains",
        "SemanticEvaluator": "semantic_similarity",
        "StrictJsonEvaluator": "strict_json_similarity",
        "TrajectoryEvaluator": "llm_judge_trajectory", "ToolOrderEvaluator": "tool_call_order"}
    exact = evaluators["ExactMatchEvaluator"]
    assert exact.target_output_key == "result" and exact.case_sensitive is False
    strict = evaluators["StrictJsonEvaluator"]
    assert strict.model == "openai:gpt-4o-mini" and strict.max_tokens == 500
    assert evaluators["SemanticEvaluator"].prompt.startswith("Compare the meaning.")


def test_null_criteria_use_the_defaults_and_objects_replace_them(calculator):
    add, multiply, again = (_by_name(calculator, c) for c in ("add", "multiply", "add-again"))
    assert add["ExactMatchEvaluator"].expected == {"result": 8.0}          # null -> default
    assert multiply["ExactMatchEvaluator"].expected == {"result": 12.0}    # object
    assert add["ExactMatchEvaluator"] is again["ExactMatchEvaluator"]      # same criteria, shared
    assert add["ExactMatchEvaluator"] is not multiply["ExactMatchEvaluator"]
    assert add["ContainsEvaluator"].search_text == "8"
    assert add["StrictJsonEvaluator"].expected == {"result": 8.0, "operator": "+"}
    assert add["ToolOrderEvaluator"].tool_calls_order == ["add"]
    assert add["TrajectoryEvaluator"].expected_agent_behavior == (
        "The agent calls the add tool once.")
    # an empty criteria object takes the item's expectedAgentBehavior, as UiPath injects it
    assert multiply["TrajectoryEvaluator"].expected_agent_behavior == (
        "The agent calls the multiply tool.")
    assert multiply["ClassificationEvaluator"].expected_class == "yes"
    assert multiply["ClassificationEvaluator"].positive_class == "yes"


def test_expected_output_comes_from_the_criteria(calculator):
    outputs = {c.case.id: c.case.expected_output for c in calculator.cases}
    assert outputs == {"add": {"result": 8.0}, "multiply": {"result": 12.0},
                       "add-again": {"result": 8.0}}


def test_weights_are_set_on_the_evaluators(calculator):
    add = _by_name(calculator, "add")
    assert add["SemanticEvaluator"].weight == 2.0
    assert add["TrajectoryEvaluator"].weight == 0.5
    assert add["ExactMatchEvaluator"].weight == 1.0


def test_unknown_keys_are_warned_about_and_bare_models_kept(calculator):
    warnings = calculator.metadata["warnings"]
    assert len(warnings) == 2
    assert any("exact-match.json: $.evaluatorConfig" in w and "'ignoreCase'" in w
               for w in warnings)
    assert any("$.evaluations[2].evaluationCriterias.RetiredEvaluator" in w for w in warnings)
    # descriptive keys and options left at UiPath's default are dropped quietly
    assert not any("'name'" in w or "'description'" in w or "targetOutputKey" in w
                   for w in warnings)
    # UiPath's bare model name: that model at the run's judge service, as from Python
    assert _by_name(calculator, "add")["SemanticEvaluator"].model == "#gpt-4.1-2025-04-14"


def test_names_for_reports_are_kept(calculator):
    meta = calculator.metadata["uipath"]
    assert meta["eval_set_id"] == "calculator-set"
    assert meta["evaluation_names"]["multiply"] == "Multiply"
    assert meta["evaluator_names"]["ExactMatchEvaluator"] == "Exact result"
    assert meta["evaluator_types"]["StrictJsonEvaluator"] == (
        "uipath-llm-judge-output-strict-json-similarity")


async def test_loaded_evaluators_score(calculator, engine_factory):
    evaluators = _by_name(calculator, "add")
    case = calculator.cases[0].case
    execution = Execution(output={"result": 8, "operator": "+"}, trace=[
        Span(name="add", attributes={"tool.name": "add", "input.value": '{"a": 3, "b": 5}'})])
    ctx = EvalContext(engine_factory())
    for name in ("ExactMatchEvaluator", "ContainsEvaluator", "ToolOrderEvaluator"):
        score = await evaluators[name].evaluate(case, execution, ctx)
        assert score.name == name and score.value == 1.0, score


def test_legacy_eval_set_and_legacy_evaluators():
    suite = load_eval_set(SETS / "legacy.json")
    assert suite.metadata["uipath"]["legacy"] is True
    assert [c.case.id for c in suite.cases] == ["legacy-add", "legacy-sub"]
    guid = "5e7a1c2b-9d3f-4e21-a8b0-6c4d2e1f0a9b"   # upper-case in its file: ids are lower-cased
    evaluators = _by_name(suite, "legacy-add")
    assert list(evaluators) == ["LegacyEquals", guid, "LegacyTrajectory"]
    assert evaluators["LegacyEquals"].type == "exact_match"
    assert evaluators["LegacyEquals"].expected == {"result": 8.0}
    assert evaluators[guid].type == "semantic_similarity"
    assert evaluators[guid].prompt.startswith("Rate how well")
    assert evaluators[guid].model is None            # same-as-agent
    trajectory = evaluators["LegacyTrajectory"]
    assert trajectory.expected_agent_behavior == "Calls add once."
    assert trajectory.model == "openai:gpt-4o-mini"
    assert _by_name(suite, "legacy-sub")["LegacyEquals"].expected == {"result": 4.0}
    first = suite.cases[0].case
    assert first.expected_output == {"result": 8.0}
    assert first.metadata["simulation_instructions"] == "The add tool returns 8."
    assert suite.metadata["uipath"]["evaluator_names"][guid] == "Legacy LLM judge"
    assert len(suite.metadata["warnings"]) == 1 and "same-as-agent" in suite.metadata[
        "warnings"][0]


def test_project_directory_and_format_detection(project):
    assert [p.name for p in find_eval_sets(project)] == ["calculator.json", "legacy.json"]
    with pytest.raises(EvaluationError, match="several eval sets found"):
        load_uipath(project)
    (project / "evaluations" / "eval-sets" / "legacy.json").unlink()
    assert load_uipath(project).name == "Calculator"
    assert load_uipath(project / "evaluations").name == "Calculator"
    assert looks_like_uipath(json.loads((SETS / "calculator.json").read_text()))
    assert not looks_like_uipath({"evalcases": []})


def test_snake_case():
    assert [snake_case(k) for k in ("targetOutputKey", "fValue", "max_tokens", "strict")] == [
        "target_output_key", "f_value", "max_tokens", "strict"]


def test_evaluator_weights_object(project):
    path = project / "evaluations" / "eval-sets" / "calculator.json"

    def weights(data: dict[str, Any]) -> None:
        del data["evaluatorConfigs"]
        data["evaluatorWeights"] = {"ContainsEvaluator": 3}

    _edit(path, weights)
    suite = load_eval_set(path)
    assert _by_name(suite, "add")["ContainsEvaluator"].weight == 3.0
    assert _by_name(suite, "add")["SemanticEvaluator"].weight == 1.0


def test_item_expected_output_is_the_cases_and_fills_empty_criteria(project):
    path = project / "evaluations" / "eval-sets" / "calculator.json"

    def item_level(data: dict[str, Any]) -> None:
        item = data["evaluations"][1]
        item["expectedOutput"] = {"result": 12}
        item["evaluationCriterias"]["StrictJsonEvaluator"] = {}

    _edit(path, item_level)
    suite = load_eval_set(path)
    multiply = next(c for c in suite.cases if c.case.id == "multiply")
    assert multiply.case.expected_output == {"result": 12}
    strict = _by_name(suite, "multiply")["StrictJsonEvaluator"]
    assert strict.expected is None  # so it compares against the case's expected output


# -- errors: file and JSON path ---------------------------------------------------------------


def test_invalid_json_names_line_and_column(project):
    bad = project / "evaluations" / "evaluators" / "contains.json"
    bad.write_text('{\n  "version": "1.0",\n  "id": "ContainsEvaluator",,\n}')
    with pytest.raises(EvaluationError) as info:
        load_eval_set(project / "evaluations" / "eval-sets" / "calculator.json")
    assert info.value.code == "invalid_json"
    assert f"{bad}:3:29: invalid JSON" in info.value.message


def test_unknown_evaluator_type_id(project):
    path = project / "evaluations" / "evaluators" / "tool-order.json"
    _edit(path, lambda d: d.update(evaluatorTypeId="uipath-tool-call-sequence"))
    with pytest.raises(EvaluationError) as info:
        load_eval_set(project / "evaluations" / "eval-sets" / "calculator.json")
    assert info.value.code == "unknown_evaluator_type"
    assert f"{path}: $.evaluatorTypeId" in info.value.message
    assert "'uipath-tool-call-sequence'" in info.value.message
    assert "uipath-tool-call-order" in info.value.message  # lists the known ones


def test_unreferenced_unsupported_evaluator_is_ignored(project):
    custom = project / "evaluations" / "evaluators" / "custom-scorer.json"
    custom.write_text(json.dumps({"version": "1.0", "id": "MyScorer",
                                  "evaluatorTypeId": "file://types/my-scorer-types.json"}))
    assert load_eval_set(project / "evaluations" / "eval-sets" / "calculator.json")
    path = project / "evaluations" / "eval-sets" / "calculator.json"
    _edit(path, lambda d: d["evaluatorConfigs"].append("MyScorer"))
    with pytest.raises(EvaluationError, match=r"custom-scorer.json: \$.evaluatorSchema: a custom "
                       r"evaluator names its code in evaluatorSchema"):
        load_eval_set(path)


def test_unsupported_legacy_type(project):
    path = project / "evaluations" / "evaluators" / "legacy-equals.json"
    _edit(path, lambda d: d.update(type=0))
    with pytest.raises(EvaluationError, match=r"legacy-equals.json: \$.type: legacy evaluator "
                       r"type 0 \(Unknown\) is not supported"):
        load_eval_set(project / "evaluations" / "eval-sets" / "legacy.json")


def test_missing_evaluator_file_for_a_ref(project):
    (project / "evaluations" / "evaluators" / "contains.json").unlink()
    path = project / "evaluations" / "eval-sets" / "calculator.json"
    with pytest.raises(EvaluationError) as info:
        load_eval_set(path)
    assert info.value.code == "missing_evaluator"
    assert f"{path}: $.evaluatorConfigs[1]" in info.value.message
    assert "no evaluator file with id 'ContainsEvaluator'" in info.value.message


def test_duplicate_evaluator_id(project):
    evaluators = project / "evaluations" / "evaluators"
    shutil.copy(evaluators / "contains.json", evaluators / "contains-copy.json")
    with pytest.raises(EvaluationError, match="defined more than once"):
        load_eval_set(project / "evaluations" / "eval-sets" / "calculator.json")


def test_null_criteria_without_defaults_is_a_located_error(project):
    path = project / "evaluations" / "eval-sets" / "calculator.json"
    _edit(path, lambda d: d["evaluations"][1]["evaluationCriterias"].update(
        ToolOrderEvaluator=None))
    with pytest.raises(EvaluationError) as info:
        load_eval_set(path)
    assert info.value.code == "invalid_evaluator_config"
    assert "$.evaluations[1].evaluationCriterias.ToolOrderEvaluator" in info.value.message
    assert "tool_calls_order" in info.value.message
    assert "has none" in info.value.message


def test_bad_criteria_weights_and_ids(project):
    path = project / "evaluations" / "eval-sets" / "calculator.json"
    original = path.read_text()
    cases = [
        (lambda d: d["evaluations"][0]["evaluationCriterias"].update(ContainsEvaluator=[1]),
         r"\$.evaluations\[0\].evaluationCriterias.ContainsEvaluator: criteria must be an "
         "object or null"),
        (lambda d: d["evaluatorConfigs"].__setitem__(2, {"ref": "SemanticEvaluator",
                                                        "weight": -1}),
         r"\$.evaluatorConfigs\[2\].weight: a weight is a number >= 0"),
        (lambda d: d["evaluations"][1].update(id="add"), r"\$.evaluations\[1\].id: duplicate"),
        (lambda d: d["evaluations"][0].pop("id"), r"\$.evaluations\[0\].id: each evaluation"),
        (lambda d: d.update(evaluatorWeights={"Nope": 1}), "does not reference: Nope"),
    ]
    for change, message in cases:
        path.write_text(original)
        _edit(path, change)
        with pytest.raises(EvaluationError, match=message):
            load_eval_set(path)


def test_not_an_eval_set(tmp_path):
    path = tmp_path / "evaluations" / "eval-sets" / "x.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"evalcases": []}')
    with pytest.raises(EvaluationError, match=r"x.json: \$.evaluations: a UiPath eval set"):
        load_eval_set(path)


# -- UiPath's output file -----------------------------------------------------------------------


def test_output_file_shape(calculator, tmp_path):
    ok = Score(name="ExactMatchEvaluator", value=1.0, raw=True, scale="bool",
               rationale="output matches", details={"expected": 8.0, "actual": 8.0},
               latency_ms=2.0)
    judged = Score(name="SemanticEvaluator", value=0.87, raw=87, scale="0-100",
                   rationale="same meaning", latency_ms=1500.0)
    failed = Score(name="TrajectoryEvaluator",
                   error=ScoreError(code="judge_output_invalid", message="no JSON"))
    output = render_for_suite(calculator, [("add", [ok, judged, failed]), ("add-again", [ok])])
    assert output["evaluationSetName"] == "Calculator"
    assert output["datasetEvaluatorResults"] == {}
    first, second = output["evaluationSetResults"]
    assert first["evaluationName"] == "Add two numbers" and first["agentExecutionOutput"] is None
    assert second["evaluationName"] == "Add again"
    runs = first["evaluationRunResults"]
    assert runs[0] == {"evaluatorName": "Exact result", "evaluatorId": "ExactMatchEvaluator",
                       "result": {"score": 1.0, "details": {"expected": 8.0, "actual": 8.0,
                                                           "justification": "output matches"},
                                  "evaluationTime": 0.002},
                       "isLineResult": False}
    assert runs[1]["evaluatorName"] == "LLMJudgeOutputEvaluator"
    assert runs[1]["result"] == {"score": 0.87, "details": {"justification": "same meaning"},
                                 "evaluationTime": 1.5}
    assert runs[2]["result"] == {"score": 0.0, "details": {"error": {
        "code": "judge_output_invalid", "message": "no JSON"}}, "evaluationTime": None}
    path = tmp_path / "out" / "results.json"
    write_uipath_output(path, output)
    assert json.loads(path.read_text()) == output


def test_output_without_uipath_names_uses_ids():
    suite = Suite(name="plain")
    score = Score(name="exact_match", value=0.0)
    output = render_for_suite(suite, [("case-1", [score])])
    assert output["evaluationSetName"] == "plain"
    result = output["evaluationSetResults"][0]
    assert result["evaluationName"] == "case-1"
    assert result["evaluationRunResults"][0]["evaluatorName"] == "exact_match"
    assert evaluator_result(score) == {"score": 0.0, "evaluationTime": None}
