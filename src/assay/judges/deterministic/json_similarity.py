"""Deterministic JSON similarity: how many of the expected leaves the output reproduces.

The expected value is walked as a tree; every leaf (a value that is not a dict or list) is
worth one point, and the output earns up to one point per leaf:

- numbers: ``1 - |e - a| / |e|`` clamped to [0, 1]; when ``e`` is (about) zero only an
  (about) zero ``a`` earns the point, since a relative error is undefined there; two integers
  are compared exactly (``10**16 + 1`` is not ``10**16``, which floats cannot tell apart);
- strings: ``1 - levenshtein(e, a) / max(len(e), len(a))``; two empty strings earn 1;
- bools, and anything else (``None``), earn 1 only when equal (others compared as ``str``);
- a value of a different type earns nothing for any of the leaves below it;
- dicts: only the expected keys count (a missing key forfeits its leaves, extra keys cost
  nothing); lists: paired by position, missing trailing items forfeit their leaves.

The score is earned / leaves, and 1.0 when the expected value has no leaves at all (an empty
container counts no leaf). This is UiPath's algorithm, so the same eval set scores the same.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from pydantic import AliasChoices, Field

from assay.judges.output_path import Comparison, OutputEvaluator
from assay.judges.registry import register

ZERO_TOLERANCE = 1e-12
BELOW_ONE = math.nextafter(1.0, 0.0)
"""The most two different numbers earn: a difference too small for a float still shows."""


def levenshtein(left: str, right: str) -> int:
    """Edit distance (insertions, deletions, substitutions), in O(len(left) * len(right))."""
    if len(left) < len(right):
        left, right = right, left
    previous = list(range(len(right) + 1))
    for i, char in enumerate(left, start=1):
        current = [i]
        for j, other in enumerate(right, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (char != other)))
        previous = current
    return previous[-1]


def string_similarity(expected: str, actual: str) -> float:
    """1 minus the edit distance over the longer length; 1.0 for two empty strings."""
    longest = max(len(expected), len(actual))
    if longest == 0:
        return 1.0
    return _clamp(1.0 - levenshtein(expected, actual) / longest)


def _clamp(value: float) -> float:
    if math.isnan(value):
        return 0.0
    return max(0.0, min(1.0, value))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def count_leaves(value: Any) -> int:
    """Leaves under a value: containers sum their children (so an empty one has 0)."""
    if isinstance(value, dict):
        return sum(count_leaves(v) for v in value.values())
    if isinstance(value, list):
        return sum(count_leaves(v) for v in value)
    return 1


def number_similarity(expected: float, actual: float) -> float:
    """Relative closeness; exact-ish zero needed when the expected number is zero.

    When an integer is involved the arithmetic is exact (an integer beyond 2**53 has no float
    of its own), so only equal integers earn the whole point."""
    if isinstance(expected, float) and isinstance(actual, float):
        if math.isclose(expected, 0.0, abs_tol=ZERO_TOLERANCE):
            return 1.0 if math.isclose(actual, 0.0, abs_tol=ZERO_TOLERANCE) else 0.0
        if not (math.isfinite(expected) and math.isfinite(actual)):
            return 1.0 if expected == actual else 0.0
        return _clamp(1.0 - abs(expected - actual) / abs(expected))
    if not all(math.isfinite(v) for v in (expected, actual) if isinstance(v, float)):
        return 0.0  # an integer never equals an infinity or NaN
    want, got = Fraction(expected), Fraction(actual)
    if abs(want) <= ZERO_TOLERANCE:
        return 1.0 if abs(got) <= ZERO_TOLERANCE else 0.0
    error = abs(want - got) / abs(want)
    if error >= 1:
        return 0.0
    return min(float(1 - error), BELOW_ONE) if error else 1.0


def compare(expected: Any, actual: Any) -> tuple[float, int]:
    """``(earned, leaves)`` for ``actual`` measured against ``expected``."""
    if _is_number(expected) and _is_number(actual):
        return number_similarity(expected, actual), 1
    if type(expected) is not type(actual):
        return 0.0, count_leaves(expected)
    if isinstance(expected, dict):
        earned, total = 0.0, 0
        for key, want in expected.items():
            got = compare(want, actual[key]) if key in actual else (0.0, count_leaves(want))
            earned, total = earned + got[0], total + got[1]
        return earned, total
    if isinstance(expected, list):
        earned, total = 0.0, 0
        for want, have in zip(expected, actual, strict=False):
            got = compare(want, have)
            earned, total = earned + got[0], total + got[1]
        for want in expected[len(actual):]:
            total += count_leaves(want)
        return earned, total
    if isinstance(expected, bool):
        return (1.0 if expected == actual else 0.0), 1
    if isinstance(expected, str):
        return string_similarity(expected, actual), 1
    return (1.0 if str(expected) == str(actual) else 0.0), 1


def similarity(expected: Any, actual: Any) -> tuple[float, float, int]:
    """``(score, earned, leaves)``; the score is 1.0 when there are no expected leaves."""
    earned, total = compare(expected, actual)
    return (1.0 if total == 0 else _clamp(earned / total)), earned, total


@register
class JsonSimilarity(OutputEvaluator):
    """Leaf-by-leaf similarity of the output to the expected JSON, from 0 to 1."""

    type = "json_similarity"
    expected: Any = Field(
        default=None, validation_alias=AliasChoices("expected", "expectedOutput"))

    def compare(self, expected: Any, actual: Any) -> Comparison:
        value, earned, total = similarity(expected, actual)
        return Comparison(
            value=value, raw=value, scale="0-1",
            rationale=f"{earned:g} of {total} expected leaves matched",
            details={"expected": expected, "actual": actual,
                     "matched_leaves": earned, "total_leaves": total})
