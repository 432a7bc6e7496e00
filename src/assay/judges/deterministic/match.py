"""Deterministic checks: no model, no cost, same answer every time.

Both follow UiPath's exact-match and contains evaluators: the output is first narrowed by
``target_output_key`` (see :mod:`assay.judges.output_path`). When either side is a string both
are compared as text, a value that is not a string as its Python ``str()``: the answer ``"4"``
equals the expected number ``4``. Otherwise the values are compared as data
(:func:`assay._util.jsondata.same_data`): integers exactly (``10**16 + 1`` is not ``10**16``), ``1``
equal to ``1.0``, and a boolean never equal to a number. Numbers are never turned into floats
first, so an integer's text is its own (``5``, not ``5.0``). No output at all counts as empty
text.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field, model_validator

from assay._util.jsondata import same_data
from assay.errors import EvaluationError
from assay.judges.base import EvalContext
from assay.judges.deterministic.confusion import AggregatorSpec, report, unique
from assay.judges.output_path import Comparison, OutputEvaluator
from assay.judges.registry import register
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score


def as_str(value: Any) -> str:
    """Python ``str()`` of a value, with no output (None) as empty text."""
    return "" if value is None else str(value)


def _fold(text: str, case_sensitive: bool) -> str:
    return text if case_sensitive else text.lower()


def _same_text(a: str, b: str, case_sensitive: bool) -> bool:
    """Whether two texts match, lower-cased unless ``case_sensitive``. ASCII texts of
    different lengths differ however they are cased, so they are never lower-cased (a copy
    of each, 30 MB for a 30 MB answer compared with a short expected output)."""
    if len(a) != len(b) and a.isascii() and b.isascii():
        return False
    return _fold(a, case_sensitive) == _fold(b, case_sensitive)


DETAIL_CHARS = 2000
"""The most of a text a score's details repeat. The whole output is stored with its
execution; details holding all of it again doubled what the store, the files and every
reader held (a 30 MB answer stored twice)."""


def _shown(value: Any) -> Any:
    """``value`` as the details keep it: text cut to :data:`DETAIL_CHARS` (marked ``…``)."""
    if isinstance(value, str) and len(value) > DETAIL_CHARS:
        return value[:DETAIL_CHARS] + "…"
    return value


def _bool_comparison(hit: bool, rationale: str, details: dict[str, Any]) -> Comparison:
    return Comparison(value=1.0 if hit else 0.0, raw=hit, scale="bool", rationale=rationale,
                      details=details)


@register
class ExactMatch(OutputEvaluator):
    """1.0 when the (selected part of the) output equals the expected output.

    If either side is a string both are compared as text, lower-cased unless
    ``case_sensitive``; otherwise the values are compared as data (``same_data``), so
    ``{"n": 1}`` equals ``{"n": 1.0}`` and integers compare exactly. ``negated`` turns a
    match into a failure.

    With ``classes`` (a label vocabulary) and ``aggregators`` (UiPath's dataset metrics:
    precision, recall, F-score under macro or micro averaging, a confusion matrix), the run
    also gets dataset-level results over every case's (expected, actual) labels; see
    :mod:`assay.judges.deterministic.confusion`. As in UiPath, aggregators need ``classes`` and cannot be
    combined with line-by-line mode, ``case_sensitive`` or ``negated``.
    """

    type = "exact_match"
    case_sensitive: bool = Field(
        default=False, validation_alias=AliasChoices("case_sensitive", "caseSensitive"))
    negated: bool = False
    expected: Any = Field(
        default=None, validation_alias=AliasChoices("expected", "expectedOutput"))
    classes: list[str] | None = Field(
        default=None, description="the label vocabulary of the dataset metrics")
    aggregators: list[AggregatorSpec] | None = Field(
        default=None, description="dataset metrics over the per-case outcomes (needs classes)")

    @model_validator(mode="after")
    def _aggregators_usable(self) -> ExactMatch:
        if not self.aggregators:
            return self
        name = self.name or self.type
        if not self.classes:
            raise ValueError(f"{name}: aggregators need 'classes', the label vocabulary to "
                             "compute precision, recall and F-score over")
        for flag, why in (("line_by_line", "per-line results carry no labels"),
                          ("case_sensitive", "labels are compared case-insensitively"),
                          ("negated", "negation flips the score but not the labels")):
            if getattr(self, flag):
                raise ValueError(f"{name}: aggregators cannot be combined with {flag} ({why})")
        lowered = [c.lower() for c in self.classes]
        if any(not c.strip() or c != c.strip() for c in self.classes) or \
                len(set(lowered)) != len(lowered):
            raise ValueError(f"{name}: classes must be non-blank, without surrounding spaces "
                             "and unique ignoring case")
        return self

    @property
    def reduces(self) -> bool:
        """Whether the run gets dataset-level results from :meth:`reduce`."""
        return bool(self.aggregators)

    def reduce(self, scores: list[Score]) -> Score | None:
        """The aggregators' results over every case's score, as one Score whose ``parts``
        are the results, each named by UiPath's key (``name::fscore``); its own value is the
        accuracy over the cases with a value."""
        if not self.aggregators or not self.classes:
            return None
        pairs = [(str((s.details or {}).get("expected")), str((s.details or {}).get("actual")))
                 if s.value is not None and s.details and "expected" in s.details else None
                 for s in scores]
        specs = unique(self.aggregators)
        counts = {t: sum(1 for s in specs if s.type == t) for t in {s.type for s in specs}}
        parts = []
        for spec in specs:
            key = spec.key(self.name, counts[spec.type] > 1)
            headline, details = report(pairs, self.classes, spec)
            if headline is None:
                parts.append(Score.not_applicable(
                    key, "a confusion matrix has no single score", details=details))
            else:
                parts.append(Score(name=key, value=headline, raw=headline, scale="0-1",
                                   passed=self.verdict(headline), details=details,
                                   rationale=f"{spec.type} ({spec.averaging}) {headline:.3f}"))
        valued = [s.value for s in scores if s.value is not None]
        if not valued:
            return Score.failed(self.name, "no_scores", f"{self.name}: none of {len(scores)} "
                                "score(s) has a value to aggregate", parts=parts)
        accuracy = sum(valued) / len(valued)
        return Score(name=self.name, value=accuracy, raw=accuracy, scale="0-1",
                     passed=self.verdict(accuracy), parts=parts,
                     rationale=f"accuracy {accuracy:.3f} over {len(valued)} case(s)")

    def compare(self, expected: Any, actual: Any) -> Comparison:
        if isinstance(expected, str) or isinstance(actual, str):
            equal = _same_text(as_str(expected), as_str(actual), self.case_sensitive)
        else:
            equal = same_data(expected, actual)
        hit = equal != self.negated
        rationale = ("output matches" if equal else "output differs") + (
            " (negated)" if self.negated else "")
        return _bool_comparison(hit, rationale, {"expected": _shown(expected),
                                                 "actual": _shown(actual)})


@register
class Contains(OutputEvaluator):
    """1.0 when the output, as text, contains the search text (or lacks it, when negated).

    The search text is the evaluator's ``search_text`` or, when that is unset, the case's
    ``metadata.search_text``: one evaluator can then serve a whole suite of cases, as UiPath's
    per-item ``searchText`` criteria do.
    """

    type = "contains"
    search_text: str | None = Field(
        default=None, validation_alias=AliasChoices("search_text", "searchText"))
    case_sensitive: bool = Field(
        default=False, validation_alias=AliasChoices("case_sensitive", "caseSensitive"))
    negated: bool = False

    uses_expected = False

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        if self.search_text is not None:
            return await super().score(case, execution, ctx)
        text = case.metadata.get("search_text")
        if not isinstance(text, str) or not text:
            raise EvaluationError(
                "missing_search_text",
                f"{self.name}: no search text; set 'search_text' on the evaluator or "
                f"'metadata.search_text' on case {case.id!r}")
        bound = self.model_copy(update={"search_text": text})
        return await OutputEvaluator.score(bound, case, execution, ctx)

    def compare(self, expected: Any, actual: Any) -> Comparison:
        needle = str(self.search_text)
        found = _fold(needle, self.case_sensitive) in _fold(as_str(actual), self.case_sensitive)
        hit = found != self.negated
        rationale = f"{needle!r} {'found' if found else 'not found'}" + (
            " (negated)" if self.negated else "")
        return _bool_comparison(hit, rationale, {"expected": _shown(needle),
                                                 "actual": _shown(actual)})
