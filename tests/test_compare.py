"""Run comparison: wins, losses, ties, mean delta, and what counts as a regression."""

from __future__ import annotations

import pytest

from assay.analysis.compare import compare_rows


def _rows(*items: tuple[str, float | None, str]) -> list[dict]:  # type: ignore[type-arg]
    return [{"case_id": c, "repeat": 0, "score": s, "verdict": v} for c, s, v in items]


def test_outcomes_and_mean_delta():
    before = _rows(("a", 0.5, "fail"), ("b", 0.9, "pass"), ("c", 0.7, "borderline"),
                   ("d", 0.4, "fail"), ("gone", 1.0, "pass"))
    after = _rows(("a", 0.65, "borderline"), ("b", 0.75, "borderline"), ("c", 0.72, "borderline"),
                  ("d", None, "error"), ("new", 1.0, "pass"))
    result = compare_rows(before, after, threshold=0.1)
    outcomes = {c.case_id: c.outcome for c in result.cases}
    assert outcomes == {"a": "win", "b": "loss", "c": "tie", "d": "error"}
    assert result.mean_delta == pytest.approx((0.15 - 0.15 + 0.02) / 3)
    assert [c.case_id for c in result.regressions] == ["b"]
    assert result.only_before == ["gone#0"] and result.only_after == ["new#0"]


def test_a_verdict_drop_below_threshold_is_still_a_regression():
    result = compare_rows(_rows(("a", 0.81, "pass")), _rows(("a", 0.79, "borderline")), 0.1)
    assert result.cases[0].outcome == "tie"
    assert result.regressions and result.regressions[0].case_id == "a"


def test_no_regression_when_equal():
    rows = _rows(("a", 0.9, "pass"), ("b", 0.3, "fail"))
    result = compare_rows(rows, rows)
    assert not result.regressions and result.mean_delta == 0
    assert result.as_dict()["ties"] == 2
