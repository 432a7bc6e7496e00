"""Human-labelled items: what every loader produces and every statistic reads.

A labelled set is a list of :class:`LabelledItem` of one :data:`Kind`, each with the human
label in one normal form, so that statistics never see a dataset's own spelling:

``pairwise``
    two outputs for one input; the label says which is better: ``"1"``, ``"2"`` or ``"tie"``
``binary``
    one output; the label says whether it is acceptable: ``"pass"`` or ``"fail"``
``ordinal``
    one output; the label is a whole number on the set's scale (1-5)
``score``
    one output; the label is a number (a mean of ratings), compared by rank and correlation

A label that cannot be read as its kind is an error that names the file, the record and the
field, and lists what is accepted: it is found while loading, before any judge is called.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.errors import ConfigError

Kind = Literal["pairwise", "binary", "ordinal", "score"]
KINDS: tuple[Kind, ...] = ("pairwise", "binary", "ordinal", "score")

PAIRWISE_LABELS = ("1", "2", "tie")
BINARY_LABELS = ("pass", "fail")
_PAIRWISE_SPELLINGS = {"1": "1", "a": "1", "output_1": "1", "response1": "1",
                       "2": "2", "b": "2", "output_2": "2", "response2": "2",
                       "0": "tie", "tie": "tie"}
_PASS = ("pass", "passed", "true", "yes", "1", "good", "correct", "acceptable")
_FAIL = ("fail", "failed", "false", "no", "0", "bad", "incorrect", "unacceptable")


class CalibrationDataError(ConfigError):
    """Labelled data that cannot be used: the message names the file, record and field."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="invalid_calibration_data")


@dataclass(frozen=True)
class Where:
    """Where a value comes from: a file, a record (1-based) or line, and a field."""

    file: str
    record: int | None = None
    line: int | None = None

    def at(self, field_name: str | None = None) -> str:
        """``FILE line N, field 'F'`` (or ``record N`` where a file has no lines)."""
        text = self.file
        if self.line is not None:
            text += f" line {self.line}"
        elif self.record is not None:
            text += f" record {self.record}"
        return f"{text}, field {field_name!r}" if field_name else text

    def place(self) -> str:
        """``line N`` or ``record N`` (the file left out), for lists of places in one file."""
        if self.line is not None:
            return f"line {self.line}"
        return f"record {self.record}" if self.record is not None else "somewhere"


class LabelledItem(BaseModel):
    """One human-labelled thing to judge. ``output_2`` is the second output of a pair."""

    model_config = ConfigDict(extra="forbid")

    id: str
    input: str | dict[str, Any] | list[Any] = ""
    output: Any = None
    output_2: Any = None
    reference: Any = None
    context: list[str] = Field(default_factory=list)
    guidelines: list[str] = Field(default_factory=list)
    label: str | int | float
    ratings: list[str | float] | None = Field(
        default=None, description="each human's own label, where the set keeps them")
    group: str | None = None
    rationale: str | None = Field(
        default=None, description="why the human gave the label (a reviewer's comment): an "
        "aligned judge is shown it with the example")
    file: str = ""
    record: int | None = None
    line: int | None = None

    @property
    def where(self) -> Where:
        return Where(self.file, self.record, self.line)


@dataclass
class Anchor:
    """A published figure on the same data, to read a calibration against."""

    metric: str
    value: float | str
    judge: str
    source: str


@dataclass
class LabelledSet:
    """Items of one kind, with what a report must say about where they come from."""

    name: str
    kind: Kind
    items: list[LabelledItem]
    title: str = ""
    scale: tuple[float, float] | None = None
    """The labels' range where it is declared (ordinal and score sets)."""
    files: list[str] = field(default_factory=list)
    licence: str = ""
    source: str = ""
    anchors: list[Anchor] = field(default_factory=list)
    default_judge: dict[str, Any] | None = None
    ratings_level: Literal["nominal", "ordinal", "interval"] | None = None
    """How the humans' own ratings compare, where the set keeps them (for the human
    agreement baseline)."""
    notes: list[str] = field(default_factory=list)
    label_field: str = "label"
    """Where the label is in a record, for messages about it."""

    @property
    def groups(self) -> list[str]:
        seen: dict[str, None] = {}
        for item in self.items:
            if item.group is not None:
                seen.setdefault(item.group, None)
        return list(seen)


def refuse_duplicate_ids(ids: Sequence[tuple[str, Where]], field_name: str) -> None:
    """Raise one error naming every id given more than once, at every place it is given.

    An item given twice would count twice in every statistic, and two labels for one item
    may contradict each other: neither can be told from a calibration's figures, so a
    file with a repeated id is refused whole, every copy named, so it can be fixed at once.
    """
    places: dict[str, list[Where]] = {}
    for item_id, where in ids:
        places.setdefault(item_id, []).append(where)
    repeated = {k: v for k, v in places.items() if len(v) > 1}
    if not repeated:
        return
    first = next(iter(repeated.values()))[0]
    shown = "; ".join(f"duplicate id {item_id!r} given {len(found)} times "
                      f"({', '.join(w.place() for w in found)})"
                      for item_id, found in repeated.items())
    raise CalibrationDataError(f"{first.file}, field {field_name!r}: {shown}; each id must "
                               "be given once")


def pairwise_label(value: Any, where: Where, field_name: str) -> str:
    """``"1"``, ``"2"`` or ``"tie"`` from the spellings datasets use (1/2, A/B, 0 for a tie)."""
    key = _spelling(value)
    found = _PAIRWISE_SPELLINGS.get(key) if key is not None else None
    if found is None:
        raise CalibrationDataError(
            f"{where.at(field_name)}: unknown label {_shown(value)}; a pairwise label is 1 or "
            "A (the first output is better), 2 or B (the second is), or 0 or tie")
    return found


def binary_label(value: Any, where: Where, field_name: str) -> str:
    """``"pass"`` or ``"fail"``: whether the output is acceptable."""
    key = _spelling(value)
    if key in _PASS:
        return "pass"
    if key in _FAIL:
        return "fail"
    raise CalibrationDataError(
        f"{where.at(field_name)}: unknown label {_shown(value)}; a pass/fail label is one of "
        f"{', '.join(_PASS)} (the output is acceptable) or {', '.join(_FAIL)}")


def ordinal_label(value: Any, scale: tuple[float, float], where: Where,
                  field_name: str) -> int:
    """A whole number within ``scale``."""
    number = _number(value)
    low, high = scale
    if number is None or not float(number).is_integer() or not low <= number <= high:
        raise CalibrationDataError(
            f"{where.at(field_name)}: unknown label {_shown(value)}; expected a whole number "
            f"from {low:g} to {high:g}")
    return int(number)


def score_label(value: Any, where: Where, field_name: str,
                scale: tuple[float, float] | None = None) -> float:
    """A finite number (within ``scale`` when one is declared)."""
    number = _number(value)
    if number is None or (scale is not None and not scale[0] <= number <= scale[1]):
        within = f" from {scale[0]:g} to {scale[1]:g}" if scale else ""
        raise CalibrationDataError(
            f"{where.at(field_name)}: unknown label {_shown(value)}; expected a number{within}")
    return float(number)


def normal_label(kind: Kind, value: Any, where: Where, field_name: str,
                 scale: tuple[float, float] | None = None) -> str | float:
    """The label of ``kind`` in normal form, or an error naming where it came from."""
    if kind == "pairwise":
        return pairwise_label(value, where, field_name)
    if kind == "binary":
        return binary_label(value, where, field_name)
    if kind == "ordinal":
        if scale is None:
            raise CalibrationDataError(f"{where.file}: ordinal labels need a declared scale "
                                       "(such as 1-5)")
        return ordinal_label(value, scale, where, field_name)
    return score_label(value, where, field_name, scale)


def infer_kind(labels: list[Any], pairs: bool = False) -> Kind:
    """The kind of labels given none: pairwise for rows with a second output; scores when
    every label is a number and some is neither 0 nor 1; otherwise pass/fail (so that a
    stray word among pass/fail labels is reported as an unknown pass/fail label)."""
    if pairs:
        return "pairwise"
    numbers = [_number(v) for v in labels]
    if all(n is not None for n in numbers) and any(n not in (0.0, 1.0) for n in numbers):
        return "score"
    return "binary"


def _spelling(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return str(int(value))
    if isinstance(value, str):
        return value.strip().lower()
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
