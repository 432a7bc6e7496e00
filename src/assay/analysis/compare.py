"""Run-to-run comparison: per case win, loss or tie, the mean delta, and regressions.

Cases are matched by (case id, repeat). A loss is a score drop of at least ``threshold``; a
regression is a loss, or a case that passed before and does not now (a verdict can change on
a small score move across a band edge, and that matters to a release gate).

Only like can be compared with like: :func:`compare_runs` refuses two runs unless both
completed and hold the same cases, because a candidate stopped after 8 of 60 cases has no
regression in the 52 it never ran. ``allow_incomplete`` compares the shared cases anyway, and
says so; two runs that share no case are never compared, since there would be nothing to judge.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.errors import EvaluationError

COMPLETED = "completed"
EXAMPLES = 5  # case keys named in a refusal; the rest are counted


@dataclass
class CaseDelta:
    case_id: str
    repeat: int
    before: float | None
    after: float | None
    verdict_before: str
    verdict_after: str
    outcome: str  # win, loss, tie, error

    @property
    def delta(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return self.after - self.before

    @property
    def regressed(self) -> bool:
        return self.outcome == "loss" or (
            self.verdict_before == "pass" and self.verdict_after != "pass")


@dataclass
class Comparison:
    threshold: float
    cases: list[CaseDelta] = field(default_factory=list)
    only_before: list[str] = field(default_factory=list)
    only_after: list[str] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)
    """Why the runs are not like for like, when compared anyway (``allow_incomplete``)."""

    def count(self, outcome: str) -> int:
        return sum(1 for c in self.cases if c.outcome == outcome)

    @property
    def mean_delta(self) -> float | None:
        deltas = [c.delta for c in self.cases if c.delta is not None]
        return sum(deltas) / len(deltas) if deltas else None

    @property
    def regressions(self) -> list[CaseDelta]:
        return [c for c in self.cases if c.regressed]

    def as_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold, "matched": len(self.cases), "wins": self.count("win"),
            "losses": self.count("loss"), "ties": self.count("tie"),
            "errors": self.count("error"),
            "mean_delta": None if self.mean_delta is None else round(self.mean_delta, 4),
            "regressions": [f"{c.case_id}#{c.repeat}" for c in self.regressions],
            "only_in_baseline": self.only_before, "only_in_candidate": self.only_after,
            "incomplete": self.incomplete,
        }


class ComparisonRefused(EvaluationError):
    """Two runs that cannot be compared like for like; ``reasons`` says why."""

    def __init__(self, message: str, reasons: list[str]) -> None:
        super().__init__("incomparable_runs", message)
        self.reasons = reasons


def compare_rows(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]],
                 threshold: float = 0.1) -> Comparison:
    """Compare two runs' case rows (``case_id``, ``repeat``, ``score``, ``verdict``)."""
    a = {(r["case_id"], r["repeat"]): r for r in before}
    b = {(r["case_id"], r["repeat"]): r for r in after}
    result = Comparison(threshold)
    for key in sorted(a.keys() & b.keys()):
        x, y = a[key], b[key]
        if x["score"] is None or y["score"] is None:
            outcome = "error"
        else:
            d = y["score"] - x["score"]
            outcome = "win" if d >= threshold else "loss" if d <= -threshold else "tie"
        result.cases.append(CaseDelta(key[0], key[1], x["score"], y["score"], x["verdict"],
                                      y["verdict"], outcome))
    result.only_before = sorted(f"{k[0]}#{k[1]}" for k in a.keys() - b.keys())
    result.only_after = sorted(f"{k[0]}#{k[1]}" for k in b.keys() - a.keys())
    return result


def _keys(rows: Sequence[Mapping[str, Any]]) -> set[tuple[str, int]]:
    return {(str(r["case_id"]), int(r["repeat"])) for r in rows}


def _named(keys: set[tuple[str, int]]) -> str:
    """A few case keys, quoted so that control characters in an id show as escapes."""
    shown = ", ".join(repr(f"{case}#{repeat}") for case, repeat in sorted(keys)[:EXAMPLES])
    more = len(keys) - EXAMPLES
    return shown + (f" and {more} more" if more > 0 else "")


def incomparability(baseline: Mapping[str, Any], candidate: Mapping[str, Any],
                    before: Sequence[Mapping[str, Any]],
                    after: Sequence[Mapping[str, Any]]) -> list[str]:
    """Why the two runs (store records with ``id`` and ``status``, and their case rows) are not
    like for like; empty when they are."""
    reasons = []
    for role, run, rows in (("baseline", baseline, before), ("candidate", candidate, after)):
        if run.get("status") != COMPLETED:
            reasons.append(f"the {role} {run['id']} is {run.get('status')!s}, not completed "
                           f"({len(rows)} case result(s) stored)")
    a, b = _keys(before), _keys(after)
    if a != b:
        detail = [f"the baseline has {len(a)} case result(s), the candidate {len(b)}"]
        if a - b:
            detail.append(f"only in the baseline: {_named(a - b)}")
        if b - a:
            detail.append(f"only in the candidate: {_named(b - a)}")
        reasons.append("; ".join(detail))
    return reasons


def compare_runs(baseline: Mapping[str, Any], candidate: Mapping[str, Any],
                 before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]],
                 threshold: float = 0.1, allow_incomplete: bool = False) -> Comparison:
    """Compare two stored runs, refusing (:class:`ComparisonRefused`) unless both completed
    with the same cases; with ``allow_incomplete`` compare the cases they share, keeping the
    reasons in ``Comparison.incomplete``. Runs that share no case are always refused."""
    reasons = incomparability(baseline, candidate, before, after)
    names = f"{baseline['id']} with {candidate['id']}"
    if not _keys(before) & _keys(after):
        raise ComparisonRefused(
            f"cannot compare {names}: they share no case, so there is nothing to compare"
            + (f" ({'; '.join(reasons)})" if reasons else ""), reasons)
    if reasons and not allow_incomplete:
        raise ComparisonRefused(
            f"cannot compare {names}: {'; '.join(reasons)}. Compare only the cases both "
            "runs hold with --allow-incomplete", reasons)
    result = compare_rows(before, after, threshold)
    result.incomplete = reasons
    return result


def compare(baseline: str, candidate: str, **options: Any) -> Any:
    """Compare two stored runs: the regression verdict on whole-run aggregates, per-case and
    per-metric deltas, paired significance and the config diff, as a typed
    :class:`~assay.analysis.run_comparison.RunComparison` (see :func:`assay.analysis.run_comparison.compare`
    for the options). The per-case comparison above stays what AgentV and UiPath suites use."""
    from assay.analysis.run_comparison import compare as compare_stored

    return compare_stored(baseline, candidate, **options)


class _CallableModule(types.ModuleType):
    """``assay.compare`` is both this module and the function: whichever the package
    attribute holds (the module, once something imports it), calling it compares runs."""

    def __call__(self, baseline: str, candidate: str, **options: Any) -> Any:
        return compare(baseline, candidate, **options)


sys.modules[__name__].__class__ = _CallableModule
