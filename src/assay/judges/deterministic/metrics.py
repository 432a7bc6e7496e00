"""Metric evaluators: structured-field accuracy and budgets for latency, cost and tokens.

These are AgentV's deterministic metric checks. They differ from it on one point on purpose:
when the number a check needs was never recorded (no latency, no cost, no token counts), the
result is an error score saying so, not a silent 0, because "we did not measure" and "the
agent was too slow" call for different fixes.
"""

from __future__ import annotations

import json
import math
import re
from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from assay._util import jsondata
from assay._util.jsondata import same_data
from assay.errors import EvaluationError
from assay.judges.base import EvalContext, Evaluator
from assay.judges.output_path import require_expected
from assay.judges.registry import register
from assay.types.case import Case
from assay.types.execution import Execution, TokenUsage
from assay.types.score import Score

DEFAULT_DATE_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%m/%d/%Y", "%d-%b-%Y", "%d %b %Y",
                        "%d %B %Y", "%b %d, %Y", "%B %d, %Y", "%Y%m%d")
"""Tried after ISO 8601 when a field gives no ``formats``: month-first for slashes, as
``%d/%m/%Y`` and ``%m/%d/%Y`` cannot both be defaults."""

_TOKENS = (("YYYY", "%Y"), ("MMMM", "%B"), ("MMM", "%b"), ("YY", "%y"), ("MM", "%m"),
           ("DD", "%d"), ("HH", "%H"), ("mm", "%M"), ("ss", "%S"))
_MISSING = object()


def strptime_format(fmt: str) -> str:
    """``DD/MM/YYYY``-style formats (AgentV's) as strptime ones; ``%`` formats unchanged."""
    if "%" in fmt:
        return fmt
    pattern = re.compile("|".join(token for token, _ in _TOKENS))
    table = dict(_TOKENS)
    return pattern.sub(lambda m: table[m.group(0)], fmt)


def parse_date(value: Any, formats: list[str]) -> date | None:
    """A date from a date, an ISO string or one of ``formats``; None when none fits."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).date()
    except ValueError:
        pass
    for fmt in formats:
        try:
            return datetime.strptime(text, strptime_format(fmt)).date()
        except ValueError:
            continue
    return None


def parse_number(value: Any) -> int | float | None:
    """A finite number from a number or a numeric string (``"1,234.5"``, ``"$3"``); an
    integer stays an integer, so a difference between two is exact."""
    if isinstance(value, bool):
        return None
    number: int | float
    if isinstance(value, int | float):
        number = value
    elif isinstance(value, str):
        cleaned = re.sub(r"[,\s$€£]", "", value)
        try:
            number = int(cleaned)
        except ValueError:
            try:
                number = float(cleaned)
            except ValueError:
                return None
    else:
        return None
    return number if isinstance(number, int) or math.isfinite(number) else None


def lookup(data: Any, path: str) -> Any:
    """The value at a dot path (``a.b.0.c`` or ``a.b[0].c``), or ``_MISSING``."""
    current = data
    for part in re.sub(r"\[(\d+)\]", r".\1", path).split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return _MISSING
    return current


def _structured(value: Any, what: str) -> Any:
    """Objects as they are; strings decoded as JSON, since agents often return JSON text."""
    if isinstance(value, dict | list):
        return value
    if isinstance(value, str):
        try:
            decoded = jsondata.loads(value)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict | list):
            return decoded
    raise EvaluationError(f"{what}_not_structured",
                          f"the {what.replace('_', ' ')} is not a JSON object or array")


class FieldSpec(BaseModel):
    """One field to compare; ``tolerance`` is required for ``numeric_tolerance``."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1)
    match: Literal["exact", "numeric_tolerance", "date"] = "exact"
    required: bool = True
    weight: float = Field(default=1.0, ge=0, allow_inf_nan=False)
    tolerance: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    relative: bool = False
    formats: list[str] = Field(default_factory=lambda: list(DEFAULT_DATE_FORMATS))

    @model_validator(mode="after")
    def _tolerance_for_numbers(self) -> FieldSpec:
        if self.match == "numeric_tolerance" and self.tolerance is None:
            raise ValueError(f"field {self.path!r}: match numeric_tolerance needs 'tolerance'")
        if self.match != "numeric_tolerance" and self.tolerance is not None:
            raise ValueError(f"field {self.path!r}: 'tolerance' only applies to "
                             "numeric_tolerance")
        return self

    def compare(self, expected: Any, actual: Any) -> tuple[bool, str]:
        """Whether ``actual`` matches; the string says why, for hits and misses."""
        if self.match == "exact":
            ok = same_data(expected, actual)
            return ok, f"{_show(actual)} {'==' if ok else '!='} {_show(expected)}"
        if self.match == "numeric_tolerance":
            want = parse_number(expected)
            if want is None:
                raise EvaluationError("bad_expected_output",
                                      f"expected value at {self.path!r} is not a number: "
                                      f"{_show(expected)}")
            got = parse_number(actual)
            if got is None:
                return False, f"{_show(actual)} is not a number"
            assert self.tolerance is not None
            allowed = self.tolerance * abs(want) if self.relative else self.tolerance
            ok = abs(got - want) <= allowed + 1e-12
            return ok, f"{got:g} vs {want:g} (difference {abs(got - want):g}, allowed {allowed:g})"
        want_date = parse_date(expected, self.formats)
        if want_date is None:
            raise EvaluationError("bad_expected_output",
                                  f"expected value at {self.path!r} is not a date in a known "
                                  f"format: {_show(expected)}")
        got_date = parse_date(actual, self.formats)
        if got_date is None:
            return False, f"{_show(actual)} is not a date in a known format"
        ok = got_date == want_date
        return ok, f"{got_date.isoformat()} {'==' if ok else '!='} {want_date.isoformat()}"


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


@register
class FieldAccuracy(Evaluator):
    """Compares fields of a structured output with the case's expected output.

    A required field the output lacks is a miss; an optional one is skipped. A field the
    expected output lacks is skipped when optional and an error when required: the dataset,
    not the agent, needs fixing then.
    """

    type = "field_accuracy"
    fields: list[FieldSpec] = Field(min_length=1)
    aggregation: Literal["weighted_average", "all_or_nothing"] = "weighted_average"

    @field_validator("fields")
    @classmethod
    def _weighted(cls, fields: list[FieldSpec]) -> list[FieldSpec]:
        if sum(f.weight for f in fields) <= 0:
            raise ValueError("field weights add up to 0; at least one must be above 0")
        return fields

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        expected = _structured(require_expected(self.name, case), "expected_output")
        actual = _structured(execution.output, "output")
        hits: list[str] = []
        misses: list[str] = []
        results: list[dict[str, Any]] = []
        total = matched = 0.0
        for spec in self.fields:
            want = lookup(expected, spec.path)
            got = lookup(actual, spec.path)
            if want is _MISSING:
                if spec.required:
                    raise EvaluationError("missing_expected_field",
                                          f"expected output has no value at {spec.path!r}")
                results.append({"path": spec.path, "status": "skipped"})
                continue
            if got is _MISSING:
                if not spec.required:
                    results.append({"path": spec.path, "status": "skipped"})
                    continue
                ok, why = False, "missing from the output"
            else:
                ok, why = spec.compare(want, got)
            total += spec.weight
            matched += spec.weight if ok else 0.0
            (hits if ok else misses).append(f"{spec.path}: {why}")
            results.append({"path": spec.path, "status": "match" if ok else "mismatch",
                            "weight": spec.weight, "reason": why})
        counted = [r for r in results if r["status"] != "skipped"]
        if not counted or total <= 0:
            raise EvaluationError("no_fields_compared",
                                  "no field could be compared (all optional fields absent)")
        if self.aggregation == "all_or_nothing":
            value = 1.0 if all(r["status"] == "match" for r in counted) else 0.0
        else:
            value = matched / total
        return Score(name=self.name, value=value, raw=value, scale="0-1",
                     passed=self.verdict(value), hits=hits, misses=misses,
                     rationale=f"{sum(1 for r in counted if r['status'] == 'match')} of "
                               f"{len(counted)} fields match",
                     details={"aggregation": self.aggregation, "fields": results})


def _binary(evaluator: Evaluator, ok: bool, raw: Any, scale: str, line: str) -> Score:
    """A 1-or-0 budget check, the measured number kept as ``raw``."""
    return Score(name=evaluator.name, value=1.0 if ok else 0.0, raw=raw, scale=scale,
                 passed=ok, rationale=line, hits=[line] if ok else [],
                 misses=[] if ok else [line])


@register
class Latency(Evaluator):
    """1 when the execution took at most ``threshold_ms``, else 0."""

    type = "latency"
    threshold_ms: float = Field(gt=0, allow_inf_nan=False)

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        if execution.latency_ms is None:
            raise EvaluationError("missing_latency",
                                  "the execution has no latency_ms to check against "
                                  f"{self.threshold_ms:g} ms")
        took = execution.latency_ms
        ok = took <= self.threshold_ms
        return _binary(self, ok, took, "ms",
                       f"took {took:g} ms ({'within' if ok else 'over'} "
                       f"{self.threshold_ms:g} ms)")


@register
class Cost(Evaluator):
    """1 when the agent's run cost at most ``budget`` USD, else 0."""

    type = "cost"
    budget: float = Field(ge=0, allow_inf_nan=False)

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        cost = execution.usage.cost if execution.usage is not None else None
        if cost is None:
            raise EvaluationError("missing_cost", "the execution has no usage.cost to check "
                                  f"against the ${self.budget:g} budget")
        ok = cost <= self.budget
        return _binary(self, ok, cost, "usd",
                       f"cost ${cost:g} ({'within' if ok else 'over'} ${self.budget:g})")


@register
class TokenBudget(Evaluator):
    """1 when every given token limit holds (input, output, total), else 0."""

    type = "token_usage"
    max_total: int | None = Field(default=None, ge=0)
    max_input: int | None = Field(default=None, ge=0)
    max_output: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _some_limit(self) -> TokenBudget:
        if self.max_total is None and self.max_input is None and self.max_output is None:
            raise ValueError("token_usage needs at least one of max_total, max_input, "
                             "max_output")
        return self

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        usage: TokenUsage | None = execution.usage
        if usage is None:
            raise EvaluationError("missing_token_usage",
                                  "the execution has no token usage to check")
        checks = [(label, used, limit) for label, used, limit in (
            ("input", usage.prompt_tokens, self.max_input),
            ("output", usage.completion_tokens, self.max_output),
            ("total", usage.total_tokens, self.max_total)) if limit is not None]
        hits = [f"{label} tokens {used} <= {limit}" for label, used, limit in checks
                if used <= limit]
        misses = [f"{label} tokens {used} > {limit}" for label, used, limit in checks
                  if used > limit]
        ok = not misses
        raw = {"input": usage.prompt_tokens, "output": usage.completion_tokens,
               "total": usage.total_tokens}
        return Score(name=self.name, value=1.0 if ok else 0.0, raw=raw, scale="tokens",
                     passed=ok, hits=hits, misses=misses,
                     rationale="; ".join(hits + misses))
