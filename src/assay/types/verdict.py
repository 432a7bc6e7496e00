"""A case's verdict, and the one band function that turns a 0-1 score into one.

Every place that bands a score (a case's weighted mean under the default policy, one
evaluator's verdict as AgentV reports it, a results file's row with no verdict, runs made to
order for tests) calls :func:`band`, so the edges (``pass`` from 0.8, ``borderline`` from
0.6, both inclusive, or a run's own ``thresholds``) are the same everywhere.
"""

from __future__ import annotations

from enum import StrEnum

PASS_AT = 0.8
BORDERLINE_AT = 0.6


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
    if score >= pass_at:
        return Verdict.PASS
    if score >= borderline_at:
        return Verdict.BORDERLINE
    return Verdict.FAIL


__all__ = ["BORDERLINE_AT", "PASS_AT", "Verdict", "band"]
