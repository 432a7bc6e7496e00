"""A case's verdict, and the one band function that turns a 0-1 score into one.

Every place that bands a score (a case's weighted mean under the default policy, one
evaluator's verdict as AgentV reports it, a results file's row with no verdict, runs made to
order for tests) calls :func:`band`, so the edges (``pass`` from 0.8, ``borderline`` from
0.6, both inclusive, or a run's own ``thresholds``) are the same everywhere.

Every figure is held against its threshold by :func:`reaches` or :func:`exceeds` (a case
score against its bands, an evaluator's value against its threshold, a run's mean score, pass
rate and error rate against its gates, a change between two runs against the change that
counts), to :data:`EDGE_PLACES` decimals: a figure that is on its edge in decimals but lands a
rounding error short of it in binary (0.7, 0.8 and 0.9 average 0.7999999999999999; 29 of 100
is 28.999999999999996 percent) is on it, as it reads (``0.800``, ``29.0%``) on every surface.
"""

from __future__ import annotations

from enum import StrEnum

PASS_AT = 0.8
BORDERLINE_AT = 0.6
EDGE_PLACES = 10
"""The decimals a figure is held against a threshold at: far finer than any figure is shown
(a score has 3, a percent 1), far coarser than a floating-point rounding error."""


def reaches(value: float, edge: float) -> bool:
    """Whether ``value`` is at or above ``edge`` (to :data:`EDGE_PLACES` decimals)."""
    return round(value, EDGE_PLACES) >= edge


def exceeds(value: float, edge: float) -> bool:
    """Whether ``value`` is above ``edge`` (to :data:`EDGE_PLACES` decimals)."""
    return round(value, EDGE_PLACES) > edge


class Verdict(StrEnum):
    """A case's verdict. ``error``: no evaluator produced a value; ``skipped``: none applied."""

    PASS = "pass"
    BORDERLINE = "borderline"
    FAIL = "fail"
    ERROR = "error"
    SKIPPED = "skipped"


def band(score: float | None, pass_at: float = PASS_AT,
         borderline_at: float = BORDERLINE_AT) -> Verdict:
    """The verdict of a 0-1 score: ``pass`` from ``pass_at``, ``borderline`` from
    ``borderline_at``, else ``fail``; no score is an ``error``."""
    if score is None:
        return Verdict.ERROR
    if reaches(score, pass_at):
        return Verdict.PASS
    if reaches(score, borderline_at):
        return Verdict.BORDERLINE
    return Verdict.FAIL


__all__ = ["BORDERLINE_AT", "EDGE_PLACES", "PASS_AT", "Verdict", "band", "exceeds", "reaches"]
