"""UiPath's legacy deterministic evaluators that had no assay counterpart: Regex and
CSVColumnExactMatch (legacy types 3 and 10). Legacy Contains (type 2) is assay's ``contains``.

``regex``
    1.0 when the (selected part of the) output, as text, matches ``pattern`` (``re.search``,
    or the whole text with ``full_match``). UiPath lists a legacy Regex type but ships no
    implementation of it; from a legacy UiPath eval set the pattern is the item's
    ``expectedOutput``, as every legacy evaluator's reference is.
``csv_exact_match``
    UiPath's CSV column match: both outputs are CSV text (a dict's ``content``, else the value
    as text), ``columns`` (UiPath's ``targetSubOutputKey``, comma-separated) are found in the
    header case-insensitively, and the first data row's values (trimmed) must be equal in every
    named column. Line by line, each data row is compared under the header with the row of the
    same position; a row that cannot be compared scores 0, as in UiPath, and the score is the
    mean. Outside line-by-line mode a CSV that cannot be read (no header, a named column
    missing, no data row) is an error score naming the problem, never a 0.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from pydantic import AliasChoices, Field, field_validator

from assay.errors import EvaluationError
from assay.judges.base import EvalContext
from assay.judges.deterministic.match import as_str
from assay.judges.output_path import Comparison, OutputEvaluator
from assay.judges.registry import register
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score


@register
class Regex(OutputEvaluator):
    """1.0 when the output text matches ``pattern``."""

    type = "regex"
    pattern: str = Field(validation_alias=AliasChoices("pattern", "expected", "expectedOutput"))
    ignore_case: bool = Field(default=False,
                              validation_alias=AliasChoices("ignore_case", "ignoreCase"))
    full_match: bool = Field(default=False,
                             validation_alias=AliasChoices("full_match", "fullMatch"))
    negated: bool = False

    uses_expected = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"pattern {pattern!r} is not a regular expression: {exc}") \
                from None
        return pattern

    def compare(self, expected: Any, actual: Any) -> Comparison:
        flags = re.IGNORECASE if self.ignore_case else 0
        text = as_str(actual)
        found = (re.fullmatch if self.full_match else re.search)(self.pattern, text, flags)
        hit = (found is not None) != self.negated
        rationale = f"pattern {self.pattern!r} {'matches' if found else 'does not match'}" + (
            " (negated)" if self.negated else "")
        return Comparison(value=1.0 if hit else 0.0, raw=hit, scale="bool", rationale=rationale,
                          details={"expected": self.pattern, "actual": text[:2000]})


def csv_text(value: Any, side: str) -> str:
    """CSV text from an output: a dict's ``content``, a string, else the value as JSON/text."""
    if isinstance(value, dict):
        value = value["content"] if "content" in value else json.dumps(value)
    text = value if isinstance(value, str) else as_str(value)
    if not text.strip():
        raise EvaluationError(f"invalid_{side}_output", f"the {side} CSV is empty")
    return text


def first_row(text: str, columns: list[str], side: str) -> dict[str, str]:
    """The named columns of the first data row (header matched case-insensitively)."""
    try:
        reader = csv.DictReader(io.StringIO(text))
        headers = reader.fieldnames
        if not headers:
            raise EvaluationError(f"invalid_{side}_output", f"the {side} CSV has no header")
        by_lower = {h.lower(): h for h in headers}
        missing = [c for c in columns if c.lower() not in by_lower]
        if missing:
            raise EvaluationError(
                f"invalid_{side}_output",
                f"the {side} CSV lacks column(s) {', '.join(missing)}; its header has "
                f"{', '.join(headers)}")
        row = next(reader, None)
    except csv.Error as exc:
        raise EvaluationError(f"invalid_{side}_output",
                              f"the {side} output is not valid CSV: {exc}") from None
    if row is None:
        raise EvaluationError(f"invalid_{side}_output", f"the {side} CSV has no data row")
    return {c: (row.get(by_lower[c.lower()]) or "").strip() for c in columns}


@register
class CsvExactMatch(OutputEvaluator):
    """1.0 when the named CSV columns of the first data row are equal."""

    type = "csv_exact_match"
    columns: list[str] = Field(validation_alias=AliasChoices(
        "columns", "target_sub_output_key", "targetSubOutputKey"))
    expected: Any = Field(default=None,
                          validation_alias=AliasChoices("expected", "expectedOutput"))

    @field_validator("columns", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [c.strip() for c in value.split(",") if c.strip()]
        if isinstance(value, list) and not value:
            raise ValueError("name at least one column (comma-separated, e.g. 'name,total')")
        return value

    def actual_value(self, execution: Execution) -> Any:
        # CSV text is not JSON: only a key into a structured output narrows it.
        output = execution.output
        if self.target_output_key != "*" and not isinstance(output, str):
            return super().actual_value(execution)
        return output

    def expected_value(self, expected: Any) -> Any:
        if self.target_output_key != "*" and isinstance(expected, dict) and \
                isinstance(self.target_output_key, str) and self.target_output_key in expected:
            return expected[self.target_output_key]
        return expected

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        if not self.line_by_line:
            return await super().score(case, execution, ctx)
        expected = csv_text(self.expected_value(self.reference(case)), "expected")
        actual = csv_text(self.actual_value(execution), "actual")
        result = self._by_row(expected, actual)
        return Score(name=self.name, value=result.value, raw=result.raw, scale=result.scale,
                     passed=self.verdict(result.value), rationale=result.rationale,
                     details=result.details)

    def compare(self, expected: Any, actual: Any) -> Comparison:
        want = first_row(csv_text(expected, "expected"), self.columns, "expected")
        got = first_row(csv_text(actual, "actual"), self.columns, "actual")
        different = [c for c in self.columns if want[c] != got[c]]
        hit = not different
        rationale = "every column matches" if hit else "different: " + ", ".join(different)
        return Comparison(value=1.0 if hit else 0.0, raw=hit, scale="bool", rationale=rationale,
                          details={"expected": want, "actual": got})

    def _by_row(self, expected: str, actual: str) -> Comparison:
        delimiter = self.line_delimiter
        left = [line for line in expected.split(delimiter) if line.strip()]
        right = [line for line in actual.split(delimiter) if line.strip()]
        if not left or not right:
            raise EvaluationError("invalid_output", "a CSV needs at least a header row")
        rows = max(len(left), len(right)) - 1
        lines: list[dict[str, Any]] = []
        for index in range(max(rows, 1)):
            want = left[index + 1] if index + 1 < len(left) else ""
            got = right[index + 1] if index + 1 < len(right) else ""
            try:
                value = self.compare(f"{left[0]}{delimiter}{want}" if want else left[0],
                                     f"{right[0]}{delimiter}{got}" if got else right[0]).value
                problem = None
            except EvaluationError as exc:
                value, problem = 0.0, exc.message
            lines.append({"line": index + 1, "expected": want, "actual": got, "value": value,
                          **({"problem": problem} if problem else {})})
        mean = sum(line["value"] for line in lines) / len(lines)
        return Comparison(value=mean, raw=mean, scale="0-1",
                          rationale=f"mean over {len(lines)} data row(s)",
                          details={"lines": lines})
