"""Scoring policies: the catalog, a policy added as a plugin would add it, the Databricks
case verdict (the overall assessment, not the band of a mean), and that a policy never
changes the objects it is given."""

from __future__ import annotations

import importlib
from typing import ClassVar

import pytest

import assay
from assay.registry import REGISTRY, scoring_policy
from assay.run.policies import policy_for
from assay.run.policies.catalog import MODULES
from assay.run.policies.default import DefaultPolicy
from assay.types.config import RunConfig
from assay.types.verdict import Verdict


def test_the_catalog_names_every_built_in_policy_and_its_module():
    for module in set(MODULES.values()):
        importlib.import_module(module)
    built_in = {name: cls.__module__ for name, cls in REGISTRY.table("scoring_policy").items()
                if cls.__module__.startswith("assay.")}
    assert built_in == MODULES


def test_an_unknown_scoring_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="unknown scoring 'strictest'; known: connexity, "
                                         "databricks, default"):
        RunConfig(scoring="strictest")


@scoring_policy
class Strict(DefaultPolicy):
    """A fourth policy: a module and a registry entry, no branch anywhere else. Every case
    must score 0.95."""

    name: ClassVar[str] = "strict_for_tests"

    def case_outcome(self, evaluators, scores):  # type: ignore[no-untyped-def]
        outcome = super().case_outcome(evaluators, scores)
        if outcome.verdict is Verdict.PASS and (outcome.score or 0) < 0.95:
            return type(outcome)(outcome.score, Verdict.FAIL)
        return outcome


def test_a_new_policy_is_a_class_and_a_registry_entry(tmp_path):
    rows = [{"id": "a", "input": "q", "output": "good answer"}]

    def ninety(outputs: str) -> float:
        return 0.9

    store = f"sqlite:///{tmp_path / 'runs.db'}"
    default = assay.evaluate(rows, evaluators=[ninety], store=store)
    strict = assay.evaluate(rows, evaluators=[ninety], store=store, scoring="strict_for_tests")
    assert default.records[0].verdict is Verdict.PASS and default.passed
    assert strict.records[0].verdict is Verdict.FAIL and not strict.passed
    assert type(policy_for(RunConfig(scoring="strict_for_tests"))) is Strict


def test_a_databricks_case_follows_its_overall_assessment_not_the_band_of_its_mean(tmp_path):
    # Five judges say yes and one says no: the mean (0.833) would band as a pass, but
    # Databricks' overall assessment of the row is "no", so the case fails.
    def judge(k: int):  # type: ignore[no-untyped-def]
        def rate(outputs: str) -> str:
            return "no" if k == 5 else "yes"
        rate.__name__ = f"judge_{k}"
        return rate

    rows = [{"id": "o1", "input": "q", "output": "an answer"}]
    result = assay.evaluate(rows, scorers=[judge(k) for k in range(6)], naming="databricks",
                            store=f"sqlite:///{tmp_path / 'runs.db'}")
    record = result.records[0]
    assert record.score == pytest.approx(5 / 6)
    assert record.verdict is Verdict.FAIL
    assert result.summary.scoring == "databricks" and not result.passed


def test_a_policy_never_changes_the_evaluators_it_is_given(tmp_path):
    from assay.judges.agent.builtin import Correctness

    judge = Correctness()
    before = (judge.model_fields_set, judge.request_from_messages)
    rows = [{"id": "r", "request": "q", "response": "a", "expected_response": "a"}]
    assay.evaluate(rows, evaluators=[judge], naming="databricks", request_from_messages="all",
                   judge_model="fake:judge", store=f"sqlite:///{tmp_path / 'runs.db'}")
    assert (judge.model_fields_set, judge.request_from_messages) == before
