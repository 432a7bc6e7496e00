"""A typed entry point, as ``uipath new`` writes it: ``main(input: EchoIn) -> EchoOut`` with
dataclasses (and the same with pydantic models and TypedDicts), run by ``assay eval`` with the
declared input type built from the eval set's ``inputs``, checked against the scores the real
``uipath eval`` (2.14.44) gave on the same project (tests/data/uipath_new/reference)."""

from __future__ import annotations

import asyncio
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pytest
from pydantic import BaseModel

from assay.targets.callable import CallableTarget
from assay.types.case import Case
from tests.test_cli_run import assay

PROJECT = Path(__file__).parent / "data" / "uipath_new"
REFERENCE = json.loads((PROJECT / "reference" / "uipath-2.14.44-scores.json").read_text())


@pytest.fixture
def echo(tmp_path: Path) -> Path:
    """The project ``uipath new echo-agent`` and ``uipath init`` made, with an eval set."""
    project = tmp_path / "echo-agent"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("reference", "variants"))
    return project


def scores_of(output_file: Path) -> dict[str, dict[str, float]]:
    """item name -> evaluator id -> score, from a UiPath output file."""
    data = json.loads(output_file.read_text())
    return {r["evaluationName"]: {x["evaluatorId"]: x["result"]["score"]
                                  for x in r["evaluationRunResults"]}
            for r in data["evaluationSetResults"]}


def test_the_uipath_new_template_scores_as_uipath_eval_does(echo: Path):
    out = assay(echo, "eval", "main", "evaluations/eval-sets/default.json",
                "--output-file", "out.json", "--no-report")
    assert out.returncode == 0, out.stdout + out.stderr
    assert scores_of(echo / "out.json") == REFERENCE["dataclass_template"]  # every score 1.0
    assert "no attribute" not in out.stdout + out.stderr


def test_pydantic_input_and_output_score_as_uipath_eval_does(echo: Path):
    shutil.copy(PROJECT / "variants" / "pydantic_main.py", echo / "main.py")
    out = assay(echo, "eval", "--output-file", "out.json")
    assert out.returncode == 0, out.stdout + out.stderr
    assert scores_of(echo / "out.json") == REFERENCE["pydantic_variant"]


def test_a_typeddict_input_is_built_from_the_case_input(echo: Path):
    # uipath 2.14.44 hands a TypedDict parameter an empty dict (every score 0.0, see the
    # reference's note); assay builds it from the input, so the agent answers.
    shutil.copy(PROJECT / "variants" / "typeddict_main.py", echo / "main.py")
    out = assay(echo, "eval", "--output-file", "out.json")
    assert out.returncode == 0, out.stdout + out.stderr
    assert REFERENCE["typeddict_variant"]["Echo once"]["ExactMatchEvaluator"] == 0.0
    assert scores_of(echo / "out.json") == REFERENCE["dataclass_template"]


def test_an_input_that_does_not_fit_names_the_field(echo: Path):
    eval_set = echo / "evaluations" / "eval-sets" / "default.json"
    data = json.loads(eval_set.read_text())
    data["evaluations"][0]["inputs"] = {"repeat": "twice"}       # no message, repeat not a number
    eval_set.write_text(json.dumps(data))
    out = assay(echo, "eval", "--out", "rows.jsonl")  # the error fails the errors gate
    assert out.returncode == 1, out.stdout + out.stderr
    rows = {r["eval_id"]: r for r in map(json.loads,
                                          (echo / "rows.jsonl").read_text().splitlines())}
    error = rows["once"]["error"]
    assert "the case input for parameter 'input' of main does not fit EchoIn" in error
    assert "field 'message': Field required" in error
    assert "field 'repeat': Input should be a valid integer" in error and "'twice'" in error
    assert "Traceback" not in error and "no attribute" not in error
    assert rows["twice"]["score"] == 1.0  # the other case is unaffected


# -- the rule, on Python targets --------------------------------------------------------


@dataclass
class Order:
    item: str
    quantity: int = 1


class Receipt(BaseModel):
    total: float
    currency: str = "EUR"


class Query(TypedDict):
    question: str


def _run(fn: Any, value: Any) -> Any:
    return asyncio.run(CallableTarget(fn).run(Case(id="c", input=value)))


def test_dataclass_pydantic_and_typeddict_parameters_are_built():
    def dataclass_agent(order: Order) -> Receipt:
        return Receipt(total=order.quantity * 2.5)

    def pydantic_agent(receipt: Receipt) -> str:
        return f"{receipt.total:.2f} {receipt.currency}"

    def typeddict_agent(query: Query) -> str:
        return query["question"].upper()

    assert _run(dataclass_agent, {"item": "tea", "quantity": "3"}).output == {
        "total": 7.5, "currency": "EUR"}           # "3" converted; the model dumped as data
    assert _run(pydantic_agent, {"total": 4}).output == "4.00 EUR"
    assert _run(typeddict_agent, {"question": "why?", "extra": 1}).output == "WHY?"
    keyword = _run(lambda order, note="": f"{order.item}{note}", {"order": {"item": "x"}})
    assert keyword.error is not None  # an unannotated parameter gets the dict as it is


def test_keyword_inputs_are_built_by_their_annotations():
    def agent(order: Order, note: str) -> str:
        return f"{order.quantity} x {order.item} ({note})"

    assert _run(agent, {"order": {"item": "tea", "quantity": 2}, "note": "hot"}).output == \
        "2 x tea (hot)"


def test_an_output_that_does_not_fit_its_declared_type_names_the_field():
    def agent(order: Order) -> Receipt:
        return {"currency": "USD"}  # type: ignore[return-value]

    execution = _run(agent, {"item": "tea"})
    assert execution.error_code == "invalid_output"
    assert execution.error == ("the output of test_an_output_that_does_not_fit_its_declared_"
                               "type_names_the_field.<locals>.agent does not fit Receipt: "
                               "field 'total': Field required")


def test_text_for_a_structured_parameter_is_a_clear_error():
    def agent(order: Order) -> str:
        return order.item

    execution = _run(agent, "two teas please")
    assert execution.error is not None
    assert "does not fit Order: expected an object with its fields (item, quantity), got " \
           "text 'two teas please'" in execution.error
