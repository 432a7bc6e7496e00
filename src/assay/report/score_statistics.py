"""The run statistics as terminal lines (see :mod:`assay.analysis.score_statistics`)."""

from __future__ import annotations

from assay.analysis.score_statistics import ScoreStatistics
from assay.report.safe_text import for_terminal
from assay.types import numbers

BAR_WIDTH = 30


def statistics_lines(stats: ScoreStatistics) -> list[str]:
    """Errors first, then the figures, the histogram and the best and worst cases."""
    if stats.total == 0:
        return ["no results to summarize"]
    lines: list[str] = []
    if stats.errors:
        lines.append(f"[bold red]errors[/] ({len(stats.errors)} case(s) without a score, "
                     "left out of the figures):")
        lines += [f"  {for_terminal(case)}: {for_terminal(why)}" for case, why in stats.errors]
    lines.append(f"total {stats.total}, scored {stats.scored}: mean "
                 f"{numbers.score(stats.mean)}, median {numbers.score(stats.median)}, min "
                 f"{numbers.score(stats.min)}, max {numbers.score(stats.max)}, std dev "
                 f"{numbers.score(stats.stdev)}")
    peak = max((count for _, _, count in stats.histogram), default=0) or 1
    lines.append("score distribution:")
    for low, high, count in stats.histogram:
        bar = "█" * round(count / peak * BAR_WIDTH)
        close = "]" if high == 1.0 else ")"
        lines.append(f"  [{numbers.score(low)}, {numbers.score(high)}{close} {bar} {count}")
    if stats.top:
        lines.append("top: " + ", ".join(f"{for_terminal(c)} {numbers.score(v)}"
                                         for c, v in stats.top))
        lines.append("bottom: " + ", ".join(f"{for_terminal(c)} {numbers.score(v)}"
                                            for c, v in stats.bottom))
    return lines
