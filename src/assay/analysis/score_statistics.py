"""The statistics ``agentv eval`` prints after a run, over case scores.

Total, mean, median, min, max, the sample standard deviation (n - 1; none under two scores),
a histogram over the bins [0, .2), [.2, .4), [.4, .6), [.6, .8) and [.8, 1], the three best
and three worst cases, and the list of cases without a score with why. One difference from
AgentV, on purpose: a case whose agent or evaluators failed has no score, so it is listed
among the errors and left out of the figures (AgentV counts it as 0, which lowers the mean
for a reason that is not the agent's quality).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from assay.types.records import CaseRecord

BREAKPOINTS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


@dataclass
class ScoreStatistics:
    """Figures over the cases that have a score; ``errors`` lists those that do not."""

    total: int = 0
    scored: int = 0
    mean: float | None = None
    median: float | None = None
    min: float | None = None
    max: float | None = None
    stdev: float | None = None
    histogram: list[tuple[float, float, int]] = field(default_factory=list)
    top: list[tuple[str, float]] = field(default_factory=list)
    bottom: list[tuple[str, float]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)


def histogram(values: Iterable[float]) -> list[tuple[float, float, int]]:
    """Counts per bin; the last bin includes 1.0."""
    bins = [[low, high, 0] for low, high in itertools.pairwise(BREAKPOINTS)]
    for value in values:
        for index, row in enumerate(bins):
            last = index == len(bins) - 1
            if row[0] <= value < row[1] or (last and row[0] <= value <= row[1]):
                row[2] += 1
                break
    return [(float(low), float(high), int(count)) for low, high, count in bins]


def _label(record: CaseRecord) -> str:
    return record.case_id if not record.repeat else f"{record.case_id}#{record.repeat}"


def _why(record: CaseRecord) -> str:
    if record.execution.error:
        return record.execution.error
    problems = [f"{s.name}: {s.error.code}: {s.error.message}" for s in record.scores
                if s.error is not None]
    return "; ".join(problems) or f"no score ({record.verdict.value})"


def score_statistics(records: Iterable[CaseRecord], top: int = 3) -> ScoreStatistics:
    """The statistics of ``records`` (each a case of a run, several runs allowed)."""
    stats = ScoreStatistics()
    scored: list[tuple[str, float]] = []
    for record in records:
        stats.total += 1
        if record.score is None or math.isnan(record.score):
            stats.errors.append((_label(record), _why(record)))
        else:
            scored.append((_label(record), record.score))
    stats.histogram = histogram(v for _, v in scored)
    if not scored:
        return stats
    values = [v for _, v in scored]
    stats.scored = len(values)
    stats.mean = sum(values) / len(values)
    stats.median = statistics.median(values)
    stats.min, stats.max = min(values), max(values)
    stats.stdev = statistics.stdev(values) if len(values) > 1 else None
    ordered = sorted(scored, key=lambda item: (-item[1], item[0]))
    count = min(top, len(ordered))
    stats.top = ordered[:count]
    stats.bottom = ordered[-count:]
    return stats
