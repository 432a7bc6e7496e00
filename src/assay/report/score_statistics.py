"""The run statistics as terminal lines (see :mod:`assay.analysis.score_statistics`)."""

from __future__ import annotations

from assay.analysis.score_statistics import ScoreStatistics
from assay.report.safe_text import for_terminal

BAR_WIDTH = 30


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def statistics_lines(stats: ScoreStatistics) -> list[str]:
    """Errors first, then the figures, the histogram and the best and worst cases."""
    if stats.total == 0:
        return ["no results to summarize"]
    lines: list[str] = []
    if stats.errors:
        lines.append(f"[bold red]errors[/] ({len(stats.errors)} case(s) without a score, "
                     "left out of the figures):")
        lines += [f"  {for_terminal(case)}: {for_terminal(why)}" for case, why in stats.errors]
    lines.append(f"total {stats.total}, scored {stats.scored}: mean {_score(stats.mean)}, "
                 f"median {_score(stats.median)}, min {_score(stats.min)}, max "
                 f"{_score(stats.max)}, std dev {_score(stats.stdev)}")
    peak = max((count for _, _, count in stats.histogram), default=0) or 1
    lines.append("score distribution:")
    for low, high, count in stats.histogram:
        bar = "█" * round(count / peak * BAR_WIDTH)
        close = "]" if high == 1.0 else ")"
        lines.append(f"  [{low:.1f}, {high:.1f}{close} {bar} {count}")
    if stats.top:
        lines.append("top: " + ", ".join(f"{for_terminal(c)} {v:.3f}" for c, v in stats.top))
        lines.append("bottom: " + ", ".join(f"{for_terminal(c)} {v:.3f}"
                                            for c, v in stats.bottom))
    return lines
