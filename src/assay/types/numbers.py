"""How a number is shown to people: one rule per kind of number, for every surface.

The terminal, Markdown, JUnit, the HTML report, the REST API's display fields and the web UI
all show numbers through these functions, so the same figure reads the same everywhere:

- a rate or share (pass rate, error rate, agreement) is a percent with one decimal: ``85.0%``;
  a change of a rate is in percentage points: ``-2.5 pt``;
- a 0-1 score has three digits: ``0.850``; a change of one is signed: ``-0.050``; so has a
  coefficient (a kappa, a correlation: ``0.612``);
- a score on a 0-100 scale (a policy's own) has one decimal and says its scale:
  ``85.0 /100``; a change of one is in points: ``-5.0 pt``;
- a latency is whole milliseconds under 10 s (``243 ms``), else seconds (``12.4 s``); a change
  says which way in words: ``+13 ms (slower)``;
- money is dollars with four decimals under $1 (``$0.0123``), six under a hundredth of a
  cent (``$0.000045``: one cheap call is not free), else two; a cost whose price is
  unknown is ``unknown``, never ``$0``; a total over parts (a run's agent, simulated user
  and judge) names the parts whose cost is unknown after the known sum:
  ``$0.0123 + unknown (agent)``, or ``unknown (agent, judge)`` when none is known;
- a p-value has four decimals, and below that says so: ``0.0312``, ``< 0.0001``;
- a value on a scale assay does not define (a measurement, an aggregate named by another
  framework's key, which its criteria compare) keeps its own digits, six at most: ``12.5``;
- a missing value is ``-``, never ``0`` or ``nan``;
- a zero has no sign: ``-0.0`` (which arithmetic makes: ``0 * -1``, a tiny drop rounded) reads
  ``0.000`` as ``0.0`` does, as a stored value does (a database keeps no sign of zero), and a
  change that rounds to nothing reads ``+0.000``;
- an evaluator's outcome on a case is its score (``0.850``), ``error CODE`` when it erred,
  ``measured 12`` when it measured (a value off the 0-1 scale, which is no skip), or ``n/a``
  when it did not apply: an error is never shown as a missing figure.

Each surface labels its figures; the web UI shows the strings the API sends (made here), so
the browser never formats a figure itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TypeGuard

MISSING = "-"


def _ok(value: float | None) -> TypeGuard[float]:
    return value is not None and not isinstance(value, bool) and math.isfinite(value)


def percent(fraction: float | None) -> str:
    """A 0-1 fraction as a percent: ``0.85`` -> ``85.0%``."""
    return f"{fraction * 100:z.1f}%" if _ok(fraction) else MISSING


def percent_points(delta: float | None) -> str:
    """A change of a 0-1 fraction in percentage points: ``-0.025`` -> ``-2.5 pt``."""
    return f"{delta * 100:+z.1f} pt" if _ok(delta) else MISSING


def score(value: float | None) -> str:
    """A 0-1 score, or a coefficient: ``0.85`` -> ``0.850``."""
    return f"{value:z.3f}" if _ok(value) else MISSING


NOT_APPLICABLE = "n/a"
MEASURED = "measured"
MEASURED_CHARS = 40
"""The most of a measured value an outcome shows (a category can be any text)."""


def outcome(value: float | None, error_code: str | None = None, skipped: bool = False,
            measured: bool = False, raw: object = None) -> str:
    """An evaluator's outcome on a case: ``0.850``, ``error judge_output_invalid``,
    ``measured 12`` or ``n/a``.

    Every surface that shows one score of a case (the terminal, reports, the API's display
    fields) says it this way, so an error reads as an error everywhere, never as ``-``, and a
    measurement (``measured``: kept as ``raw``, off the 0-1 scale) reads as what it measured,
    never as ``n/a``: every summary counts it apart from the skips.
    """
    if error_code is not None:
        return f"error {error_code}"
    if measured:
        return measured_text(raw)
    if skipped:
        return NOT_APPLICABLE
    return score(value)


def measured_text(raw: object) -> str:
    """A measurement's value on a case: ``measured 12``, ``measured 4.5``, ``measured
    positive`` (a number with its own digits, a text cut), ``measured`` when none was kept."""
    if raw is None:
        return MEASURED
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return f"{MEASURED} {plain(raw)}"
    text = str(raw)
    if len(text) > MEASURED_CHARS:
        text = text[:MEASURED_CHARS] + "…"
    return f"{MEASURED} {text}"


def score_delta(delta: float | None) -> str:
    """A change of a 0-1 score: ``-0.05`` -> ``-0.050``."""
    return f"{delta:+z.3f}" if _ok(delta) else MISSING


def points(value: float | None, scale: float = 100) -> str:
    """A score on a 0-``scale`` scale: ``85`` -> ``85.0 /100``."""
    return f"{value:z.1f} /{scale:g}" if _ok(value) else MISSING


def points_delta(delta: float | None) -> str:
    """A change of a score on a 0-100 scale: ``-5`` -> ``-5.0 pt``."""
    return f"{delta:+z.1f} pt" if _ok(delta) else MISSING


def milliseconds(value: float | None) -> str:
    """A duration given in milliseconds: ``243.4`` -> ``243 ms``; ``12400`` -> ``12.4 s``."""
    if not _ok(value):
        return MISSING
    return f"{value:z.0f} ms" if abs(value) < 10_000 else f"{value / 1000:z.1f} s"


def milliseconds_delta(delta: float | None) -> str:
    """A signed difference of durations: ``+13 ms``, ``-1.2 s`` (an interval's bounds)."""
    if not _ok(delta):
        return MISSING
    sign = "+" if delta > 0 else "-" if delta < 0 else ""
    return f"{sign}{milliseconds(abs(delta))}"


def latency_change(delta: float | None) -> str:
    """A change of latency with its direction in words: ``+13 ms (slower)``."""
    if not _ok(delta):
        return MISSING
    word = " (slower)" if delta > 0 else " (faster)" if delta < 0 else ""
    return f"{milliseconds_delta(delta)}{word}"


def usd(value: float | None) -> str:
    """Money: ``0.01234`` -> ``$0.0123``; ``12.5`` -> ``$12.50``; ``0.0000412`` ->
    ``$0.000041``, so a call that cost something never reads as ``$0.0000``."""
    if not _ok(value):
        return MISSING
    if abs(value) >= 1:
        return f"${value:z,.2f}"
    return f"${value:z.6f}" if 0 < abs(value) < 0.0001 else f"${value:z.4f}"


def cost(value: float | None) -> str:
    """A cost that may be unknown (a model with no known price): ``unknown``, never ``$0``
    nor ``-``; else :func:`usd`."""
    return usd(value) if _ok(value) else "unknown"


def cost_parts(known: float | None, unknown: Sequence[str] = ()) -> str:
    """A total over parts whose costs are summed where known (a run's agent, simulated user
    and judge), naming the parts that spent but whose cost is unknown: a sum that left one
    out would read as complete. ``$0.0123 + unknown (agent)``; ``unknown (agent, judge)``
    when no part's cost is known; :func:`cost` when every part's is."""
    if not unknown:
        return cost(known)
    parts = f"unknown ({', '.join(unknown)})"
    return f"{usd(known)} + {parts}" if _ok(known) else parts


NOT_COMPARABLE = "not comparable"
"""A change between two figures of which one (or both) leaves a part out (a cost with an
unknown part): no difference of the known parts is a measured change."""


def counts(named: Mapping[str, int]) -> str:
    """Counts by name, in name order: ``max_turns 2, user_ended 4``; ``-`` for none. The
    names are shown as given: a surface escapes them for its medium."""
    if not named:
        return MISSING
    return ", ".join(f"{name} {count(n)}" for name, n in sorted(named.items()))


def usd_change(delta: float | None) -> str:
    """A change of cost with its direction in words: ``+$0.0100 (more)``."""
    if not _ok(delta):
        return MISSING
    word = " (more)" if delta > 0 else " (less)" if delta < 0 else ""
    sign = "+" if delta > 0 else "-" if delta < 0 else ""
    return f"{sign}{usd(abs(delta))}{word}"


def p_value(p: float | None) -> str:
    """A test's p-value: ``0.03123`` -> ``0.0312``; ``0.00001`` -> ``< 0.0001``."""
    if not _ok(p):
        return MISSING
    return "< 0.0001" if p < 0.0001 else f"{p:z.4f}"


def plain(value: float | None) -> str:
    """A value on a scale assay does not define, with its own digits: ``12.5``, ``0.8333``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return count(value)
    return f"{value:z.6g}" if _ok(value) else MISSING


def count(value: int | None) -> str:
    """A count with thousands separated: ``12345`` -> ``12,345``."""
    return f"{value:,}" if value is not None else MISSING


def count_of(value: int, noun: str) -> str:
    """A count with its noun, singular for one: ``1 case``, ``1,000 cases``; so a count
    never reads ``1 case(s)``."""
    return f"{count(value)} {noun}{'' if value == 1 else 's'}"


__all__ = ["MISSING", "NOT_COMPARABLE", "cost", "cost_parts", "count", "count_of", "counts",
           "latency_change", "milliseconds", "milliseconds_delta", "p_value", "percent",
           "percent_points", "plain", "points", "points_delta", "score", "score_delta", "usd",
           "usd_change"]
