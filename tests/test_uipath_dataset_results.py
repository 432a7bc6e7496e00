"""UiPath's dataset-level results: exact match ``classes`` and ``aggregators``, per-line
results in line-by-line mode, and the per-evaluator averages ``uipath eval`` prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.errors import EvaluationError
from assay.judges import build
from assay.report.uipath_output import render_for_records
from tests.test_cli_run import assay as assay_cli

# (expected, predicted): the agent answers the predicted intent.
PAIRS = [("Book", "book"), ("Book", "flight"), ("Flight", "flight"), ("Hotel", "hotel"),
         ("Hotel", "book"), ("Flight", "cancel")]


def project(tmp_path: Path, evaluator_config: dict[str, Any],
            items: list[dict[str, Any]]) -> Path:
    evaluators = tmp_path / "evaluations" / "evaluators"
    sets = tmp_path / "evaluations" / "eval-sets"
    evaluators.mkdir(parents=True)
    sets.mkdir()
    (evaluators / "intent.json").write_text(json.dumps({
        "version": "1.0", "id": "intent-em", "evaluatorTypeId": "uipath-exact-match",
        "evaluatorConfig": {"name": "Intent", **evaluator_config}}))
    path = sets / "intents.json"
    path.write_text(json.dumps({"version": "1.0", "id": "intents", "name": "Intents",
                                "evaluatorRefs": ["intent-em"], "evaluations": items}))
    return path


def intent_items() -> list[dict[str, Any]]:
    return [{"id": f"q{i}", "name": f"Question {i}", "inputs": {"predicted": predicted},
             "evaluationCriterias": {"intent-em": {"expectedOutput": {"intent": expected}}}}
            for i, (expected, predicted) in enumerate(PAIRS, start=1)]


AGGREGATORS = [{"type": "fscore", "averaging": "macro"},
               {"type": "precision", "averaging": "micro"},
               {"type": "precision", "averaging": "macro"},
               {"type": "confusion_matrix"}]


def test_exact_match_aggregators_by_hand(tmp_path):
    path = project(tmp_path, {"targetOutputKey": "intent", "classes": ["Book", "Flight", "Hotel"],
                              "aggregators": AGGREGATORS}, intent_items())
    result = assay.evaluate(path, target=lambda inputs: {"intent": inputs["predicted"]})
    metric = result.summary.dataset_metrics["intent-em"]
    assert metric.value == pytest.approx(0.5)  # q1, q3, q4 match: accuracy 3/6
    parts = {p.name: p for p in metric.parts}
    # matrix[predicted][expected]: book<-book, flight<-book, flight<-flight, hotel<-hotel,
    # book<-hotel; "cancel" is out of the classes: a miss (FN) of Flight.
    # Book P 1/2 R 1/2 F .5; Flight P 1/2 R 1/2 F .5; Hotel P 1/1 R 1/2 F 2/3.
    assert parts["intent-em::fscore"].value == pytest.approx((0.5 + 0.5 + 2 / 3) / 3)
    assert parts["intent-em::precision.micro"].value == pytest.approx(3 / 5)  # tp 3, fp 2
    assert parts["intent-em::precision.macro"].value == pytest.approx((0.5 + 0.5 + 1) / 3)
    matrix = parts["intent-em::confusion_matrix"]
    assert matrix.value is None and matrix.details["confusionMatrix"] == [[1, 0, 1], [1, 1, 0],
                                                                          [0, 0, 1]]
    hotel = parts["intent-em::fscore"].details["perClass"]["Hotel"]
    assert (hotel["tp"], hotel["fp"], hotel["fn"], hotel["tn"]) == (1, 0, 1, 4)
    assert parts["intent-em::fscore"].details["micro"]["recall"] == pytest.approx(3 / 6)

    output = render_for_records(result)
    dataset = output["datasetEvaluatorResults"]
    assert set(dataset) == {"Intent::fscore", "Intent::precision.micro",
                            "Intent::precision.macro", "Intent::confusion_matrix"}
    assert dataset["Intent::fscore"]["score"] == pytest.approx(5 / 9)
    assert dataset["Intent::confusion_matrix"]["score"] == 0.0  # no headline, as UiPath writes
    assert dataset["Intent::fscore"]["details"]["nTotal"] == 6


@pytest.mark.parametrize("config, message", [
    ({"aggregators": [{"type": "fscore", "averaging": "macro"}]}, "aggregators need 'classes'"),
    ({"classes": ["a", "A"], "aggregators": [{"type": "confusion_matrix"}]}, "unique"),
    ({"classes": ["a"], "negated": True, "aggregators": [{"type": "confusion_matrix"}]},
     "cannot be combined with negated"),
    ({"classes": ["a"], "aggregators": [{"type": "recall"}]}, "needs 'averaging'"),
])
def test_bad_aggregator_configs_are_located_errors(tmp_path, config, message):
    path = project(tmp_path, config, intent_items()[:1])
    with pytest.raises(EvaluationError) as info:
        assay.evaluate(path, target=lambda inputs: {"intent": "book"})
    assert message in info.value.message and "$.evaluations[0]" in info.value.message


def test_line_results_in_line_by_line_mode(tmp_path):
    path = project(tmp_path, {"lineByLineEvaluator": True},
                   [{"id": "lines", "name": "Lines", "inputs": {},
                     "evaluationCriterias": {"intent-em": {"expectedOutput": "a\nx\nc"}}}])
    result = assay.evaluate(path, target=lambda inputs: "a\nb\nc")
    assert result.records[0].scores[0].value == pytest.approx(2 / 3)
    entries = render_for_records(result)["evaluationSetResults"][0]["evaluationRunResults"]
    assert [(e["evaluatorName"], e["evaluatorId"], e["result"]["score"], e["isLineResult"])
            for e in entries] == [
        ("Intent (Line 1)", "intent-em_line_1", 1.0, True),
        ("Intent (Line 2)", "intent-em_line_2", 0.0, True),
        ("Intent (Line 3)", "intent-em_line_3", 1.0, True),
        ("Intent", "intent-em", pytest.approx(2 / 3), False)]
    assert entries[1]["result"]["details"] == {"expected": "x", "actual": "b"}


def test_console_shows_per_evaluator_averages(tmp_path):
    path = project(tmp_path, {"targetOutputKey": "intent", "classes": ["Book", "Flight", "Hotel"],
                              "aggregators": AGGREGATORS}, intent_items())
    (tmp_path / "agent.py").write_text(
        "def run(inputs):\n    return {'intent': inputs['predicted']}\n")
    (tmp_path / ".assay").mkdir()
    (tmp_path / ".assay" / "targets.yaml").write_text(
        "targets:\n  - name: agent\n    provider: python\n    function: agent:run\n")
    out = assay_cli(tmp_path, "run", str(path), "--target", "agent", "--max-failed", "10",
                    "--uipath-output", "out.json")
    assert out.returncode == 0, out.stderr
    assert "Evaluation Results" in out.stdout and "Question 2" in out.stdout
    average = next(line for line in out.stdout.splitlines() if "Average" in line)
    assert "0.50" in average  # the exact match's dataset score: accuracy 3/6
    assert "dataset metric intent-em::fscore: 0.556" in out.stdout
    written = json.loads((tmp_path / "out.json").read_text())
    assert written["datasetEvaluatorResults"]["Intent::precision.micro"]["score"] == \
        pytest.approx(0.6)


def test_exact_match_without_aggregators_collects_nothing():
    assert build({"type": "exact_match"}).reduces is False
