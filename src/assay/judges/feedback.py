"""Feedback: what a scorer or a typed judge returns, and the values that are not scores.

:class:`Feedback` is MLflow's shape (``value``, ``rationale``, ``name``, ``error``), so scorer
code written for ``mlflow.genai`` returns the same thing to assay; MLflow's own ``Feedback``
objects are read too. A value on assay's 0-1 scale (a bool, yes/no, a number in [0, 1]) is a
score. Other values (a 1-5 rating, a length in tokens, a category such as "good") are
*measurements* when the judge or scorer declares that it measures (a scorer's
``kind="measurement"``, a ``make_judge`` typed ``int`` or ``str``): kept as ``raw`` and
aggregated as they are (MLflow's ``<name>/mean``; assay's ``<name>/measured/mean``), but with
no place in a 0-1 case score, so the score is marked not applicable with
``details["measurement"]`` and counts in no verdict. A measurement is never turned into a
made-up 0-1 value; from a scorer that declared nothing, such a value is an error.
"""

from __future__ import annotations

import contextlib
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from assay.types.score import MEASUREMENT, Score


@dataclass
class Feedback:
    """One judgement: a value and why, or the error that prevented it.

    ``value`` may be a bool, a number, a string (yes/no or a category), or None; ``name``
    names the judgement when a scorer returns several; ``error`` (a message or an exception)
    makes it an error with ``error_code`` (default ``scorer_error``).
    """

    value: Any = None
    rationale: str | None = None
    name: str | None = None
    error: str | BaseException | None = None
    error_code: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def as_feedback(value: Any) -> Feedback | None:
    """``value`` as a Feedback when it is one (assay's, or MLflow's by its attributes)."""
    if isinstance(value, Feedback):
        return value
    if type(value).__name__ == "Feedback" and hasattr(value, "value") and \
            hasattr(value, "rationale"):
        error = getattr(value, "error", None)
        code = None
        if error is not None and not isinstance(error, str | BaseException):
            code = getattr(error, "error_code", None)
            error = getattr(error, "error_message", None) or str(error)
        return Feedback(value=getattr(value, "value", None),
                        rationale=getattr(value, "rationale", None),
                        name=getattr(value, "name", None), error=error, error_code=code)
    return None


def measured(name: str, raw: Any, scale: str, rationale: str | None = None,
             **extra: Any) -> Score:
    """A value that is not on the 0-1 scale (see the module docstring), kept as ``raw``."""
    details = {**(extra.pop("details", None) or {}), MEASUREMENT: True}
    shown = raw if not isinstance(raw, str) else repr(raw[:80])
    return Score.not_applicable(
        name, f"{shown} is a {scale} value, not a 0-1 score: kept as raw, left out of case "
        "scores", raw=raw, scale=scale, label=raw if isinstance(raw, str) else None,
        rationale=rationale, details=details, **extra)


def is_measurement(score: Score) -> bool:
    return score.measurement


def numeric(value: Any) -> float | None:
    """A value as MLflow aggregates it: bools and numbers as numbers, yes/no as 1/0, anything
    else (other text, None, NaN) is not a number."""
    number = _number(value)
    return None if number is None else float(number)


def _number(value: Any) -> int | float | None:
    """:func:`numeric` with integers kept exact (a float cannot tell ``10**16 + 1`` from
    ``10**16``): what a ``pass_if`` compares."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, str):
        word = value.strip().lower()
        if word == "yes":
            return 1
        if word == "no":
            return 0
    return None


def _operand(text: str) -> int | float | str:
    """A ``pass_if`` operand: an integer, else a float, else text without its quotes."""
    for parse in (int, float):
        with contextlib.suppress(ValueError):
            return parse(text)
    return text.strip("'\"")


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt,
    "==": operator.eq, "!=": operator.ne}
_CONDITION = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*(.+?)\s*$")

PassIf = str | Callable[[Any], bool]


def check_pass_if(value: PassIf | None) -> PassIf | None:
    """Validate a ``pass_if``: a function of the value, or ``"OP X"`` (``">= 3"``,
    ``"== good"``); raises ValueError naming the accepted forms."""
    if value is None or callable(value):
        return value
    if isinstance(value, str) and _CONDITION.match(value):
        return value
    raise ValueError(f"pass_if {value!r}: expected a function of the value, or a condition "
                     "such as '>= 3', '< 0.5' or '== good' (operators >=, <=, >, <, ==, !=)")


def passes(pass_if: PassIf, value: Any) -> bool:
    """Whether ``value`` meets ``pass_if`` (a value the condition cannot compare fails)."""
    if callable(pass_if):
        return bool(pass_if(value))
    found = _CONDITION.match(pass_if)
    assert found is not None
    op, target = _OPS[found.group(1)], _operand(found.group(2).strip())
    try:
        if not isinstance(target, str):
            number = _number(value)  # Python compares an int with a float exactly
            return number is not None and op(number, target)
        return op(str(value), target)
    except TypeError:
        return False
