"""Deterministic checks: no model, no cost, same answer every time."""

from __future__ import annotations

from typing import Any

from assay.judges.base import EvalContext, Evaluator
from assay.judges.registry import register
from assay.judges.templates import as_text
from assay.model import Case, Execution, Score


def _text(value: Any, case_sensitive: bool) -> str:
    text = as_text(value)
    return text if case_sensitive else text.lower()


@register
class ExactMatch(Evaluator):
    """1.0 when the output equals the expected output (strings compared as text)."""

    type = "exact_match"
    case_sensitive: bool = False
    negated: bool = False
    expected: Any = None

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        expected = self.expected if self.expected is not None else case.expected_output
        actual = execution.output
        if isinstance(expected, str) or isinstance(actual, str):
            equal = _text(expected, self.case_sensitive).strip() == _text(
                actual, self.case_sensitive).strip()
        else:
            equal = expected == actual
        hit = equal != self.negated
        value = 1.0 if hit else 0.0
        return Score(name=self.name, value=value, raw=hit, scale="bool", passed=hit,
                     rationale=("output matches" if equal else "output differs") +
                     (" (negated)" if self.negated else ""),
                     details={"expected": expected, "actual": actual})


@register
class Contains(Evaluator):
    """1.0 when the output contains the search text."""

    type = "contains"
    search_text: str
    case_sensitive: bool = False
    negated: bool = False

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        found = _text(self.search_text, self.case_sensitive) in _text(
            execution.output, self.case_sensitive)
        hit = found != self.negated
        return Score(name=self.name, value=1.0 if hit else 0.0, raw=hit, scale="bool",
                     passed=hit,
                     rationale=f"{self.search_text!r} {'found' if found else 'not found'}"
                     + (" (negated)" if self.negated else ""))
