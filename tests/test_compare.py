"""The per-case rule of each policy: what a changed case is, on the 0-100 scale.

The default policy is AgentV's: a verdict change, else a score move of at least 10 points
(0.1). The Connexity policy: a pass flip, else a move of more than 5 points. The Databricks
policy: the overall assessment's flip only.
"""

from __future__ import annotations

import pytest

from assay.analysis.compare import case_status


@pytest.mark.parametrize(("before", "after", "status"), [
    ((False, 50.0), (False, 65.0), "improvement"),   # +15 points
    ((True, 90.0), (False, 75.0), "regression"),     # pass -> not passed
    ((False, 70.0), (False, 72.0), "unchanged"),
    ((True, 90.0), (True, 80.0), "regression"),      # -10 points: AgentV's >= rule
    ((True, 81.0), (False, 79.0), "regression"),     # a 2-point move across the band edge
])
def test_the_default_rule(before, after, status):
    assert case_status(before[0], after[0], before[1], after[1],
                       scoring="default")[0] == status


def test_the_connexity_rule_is_strict_at_five_points():
    assert case_status(True, True, 80.0, 75.0, scoring="connexity")[0] == "unchanged"
    assert case_status(True, True, 80.0, 74.99, scoring="connexity")[0] == "regression"
    assert case_status(True, True, 80.0, 85.01, scoring="connexity")[0] == "improvement"


def test_the_databricks_rule_reads_the_verdict_only():
    assert case_status(True, True, 100.0, 10.0, scoring="databricks")[0] == "unchanged"
    assert case_status(True, False, 50.0, 50.0, scoring="databricks")[0] == "regression"


def test_an_error_on_either_side_is_an_error_not_a_regression():
    for scoring in ("default", "connexity", "databricks"):
        assert case_status(True, None, 90.0, None, candidate_error=True,
                           scoring=scoring)[0] == "error"
