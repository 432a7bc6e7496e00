"""Run-to-run comparison: per case win, loss or tie, the mean delta, and regressions.

Cases are matched by (case id, repeat). A loss is a score drop of at least ``threshold``; a
regression is a loss, or a case that passed before and does not now (a verdict can change on
a small score move across a band edge, and that matters to a release gate).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
        }


def compare_rows(before: list[dict[str, Any]], after: list[dict[str, Any]],
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
