"""Tool-call evaluators: did the agent call the right tools, in order, often enough, with the
right arguments, and get the right outputs back?

The actual calls come from :func:`assay.traces.tools.tool_calls` (tool spans, else the tool calls in
the execution's messages). Expected calls are matched to actual ones as UiPath does: by tool id
when the actual call has one, else by sanitised name (see :func:`assay.traces.tools.matches_key`).

All four share two rules for empty lists, so "no tools expected, none called" is a pass and
"tools expected, none called" (or the reverse) a plain failure: both empty scores 1.0, exactly
one empty scores 0.0. Note the consequence for ``tool_call_count``: ``{"search": ["=", 0]}``
with no calls at all scores 0.0, because the expectation is not empty and the calls are.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sized
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from assay.judges.base import EvalContext, Evaluator
from assay.judges.registry import register
from assay.traces.tools import (
    ToolCallRecord,
    args_match,
    matches_expected,
    matches_key,
    tool_calls,
)
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.json import dump_json
from assay.types.score import Score

Comparator = Literal[">", "<", ">=", "<=", "=", "==", "!="]
COMPARATORS: dict[str, Callable[[int, int], bool]] = {
    ">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le,
    "=": operator.eq, "==": operator.eq, "!=": operator.ne,
}


def _alias(snake: str, camel: str) -> AliasChoices:
    """Accept assay's snake_case name and UiPath's camelCase criteria key alike."""
    return AliasChoices(snake, camel)


def empty_rule(expected: Sized, actual: Sized) -> float | None:
    """1.0 when both are empty, 0.0 when exactly one is, None when both have items."""
    if not expected and not actual:
        return 1.0
    if not expected or not actual:
        return 0.0
    return None


class ToolCallEvaluator(Evaluator):
    """Shared plumbing: read the calls, apply the empty-list rules, build the score."""

    strict: bool = False

    def _result(self, value: float, rationale: str, details: dict[str, Any],
                hits: list[str] | None = None, misses: list[str] | None = None) -> Score:
        return Score(name=self.name, value=value, raw=value, scale="0-1",
                     passed=self.verdict(value), rationale=rationale,
                     hits=hits or [], misses=misses or [], details=details)

    def _empty(self, expected: Sized, actual: list[ToolCallRecord],
               details: dict[str, Any]) -> Score | None:
        value = empty_rule(expected, actual)
        if value is None:
            return None
        if value == 1.0:
            why = "no tool calls expected and none made"
        elif actual:
            why = f"no tool calls expected but {len(actual)} made"
        else:
            why = "tool calls expected but none found (no tool spans and no tool calls in "\
                "the messages)"
        return self._result(value, why, details)

    def _greedy_score(self, expected: list[Any], actual: list[ToolCallRecord],
                      fits: Callable[[Any, ToolCallRecord], bool],
                      why_not: Callable[[Any], str], explained: str, what: str) -> Score:
        """Match each expected item to the first unused actual call that ``fits`` it, and
        score the fraction matched (all or nothing when strict)."""
        details: dict[str, Any] = {"expected": [e.model_dump() for e in expected],
                                   "actual": [c.model_dump() for c in actual]}
        empty = self._empty(expected, actual, details)
        if empty is not None:
            return empty
        chosen = _greedy(expected, actual, fits)
        details[explained] = _explain(expected, actual, chosen, why_not)
        return self._matched(expected, chosen, details, what)

    def _matched(self, expected: list[Any], chosen: list[int | None],
                 details: dict[str, Any], what: str) -> Score:
        matched = sum(1 for pick in chosen if pick is not None)
        hits = [e.name for e, pick in zip(expected, chosen, strict=True) if pick is not None]
        misses = [e.name for e, pick in zip(expected, chosen, strict=True) if pick is None]
        value = matched / len(expected)
        if self.strict:
            value = 1.0 if matched == len(expected) else 0.0
        return self._result(value, f"{matched} of {len(expected)} expected {what}"
                            + (" (strict)" if self.strict else ""), details, hits, misses)


def _names(calls: list[ToolCallRecord]) -> list[str]:
    return [c.id or c.name for c in calls]


# -- order -------------------------------------------------------------------------------


def lcs(expected: list[str], actual: list[ToolCallRecord]) -> list[str]:
    """The longest common subsequence of expected keys and actual calls (as expected keys)."""
    rows, cols = len(expected), len(actual)
    table = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(rows - 1, -1, -1):
        for j in range(cols - 1, -1, -1):
            if matches_key(actual[j], expected[i]):
                table[i][j] = table[i + 1][j + 1] + 1
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    found: list[str] = []
    i = j = 0
    while i < rows and j < cols:
        if matches_key(actual[j], expected[i]):
            found.append(expected[i])
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return found


@register
class ToolCallOrder(ToolCallEvaluator):
    """How much of the expected call sequence appears, in order: LCS length / expected length.

    Strict: 1.0 only when the calls are exactly the expected sequence, position by position.
    """

    type = "tool_call_order"
    tool_calls_order: list[str] = Field(
        validation_alias=_alias("tool_calls_order", "toolCallsOrder"))

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        actual = tool_calls(execution)
        expected = self.tool_calls_order
        details: dict[str, Any] = {"expected": expected, "actual": _names(actual)}
        empty = self._empty(expected, actual, details)
        if empty is not None:
            return empty
        if self.strict:
            exact = len(expected) == len(actual) and all(
                matches_key(call, key) for key, call in zip(expected, actual, strict=True))
            details["exact"] = exact
            return self._result(1.0 if exact else 0.0,
                                "calls are exactly the expected sequence" if exact
                                else "calls differ from the expected sequence (strict)",
                                details)
        common = lcs(expected, actual)
        details["lcs"] = common
        missing = list(expected)
        for key in common:
            missing.remove(key)
        return self._result(len(common) / len(expected),
                            f"{len(common)} of {len(expected)} expected calls in order",
                            details, hits=common, misses=missing)


# -- count -------------------------------------------------------------------------------

Count = tuple[Comparator, Annotated[int, Field(ge=0)]]


@register
class ToolCallCount(ToolCallEvaluator):
    """The fraction of tools whose call count satisfies ``{tool: [comparator, n]}``.

    Strict: 0.0 as soon as one tool fails. Comparators: ``> < >= <= = == !=``.
    """

    type = "tool_call_count"
    tool_calls_count: dict[str, Count] = Field(
        validation_alias=_alias("tool_calls_count", "toolCallsCount"))

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        actual = tool_calls(execution)
        details: dict[str, Any] = {
            "expected": {k: list(v) for k, v in self.tool_calls_count.items()},
            "actual": _names(actual)}
        empty = self._empty(self.tool_calls_count, actual, details)
        if empty is not None:
            return empty
        explained: list[dict[str, Any]] = []
        hits: list[str] = []
        misses: list[str] = []
        for tool, (op, wanted) in self.tool_calls_count.items():
            count = sum(1 for call in actual if matches_key(call, tool))
            ok = COMPARATORS[op](count, wanted)
            explained.append({"tool": tool, "count": count, "comparator": op,
                              "expected": wanted, "satisfied": ok})
            (hits if ok else misses).append(f"{tool}: {count} {op} {wanted}")
            if self.strict and not ok:
                details["explained_tool_calls_count"] = explained
                return self._result(0.0, f"{tool} was called {count} time(s), expected "
                                    f"{op} {wanted} (strict)", details, hits, misses)
        details["explained_tool_calls_count"] = explained
        satisfied = sum(1 for e in explained if e["satisfied"])
        value = satisfied / len(explained)
        return self._result(value, f"{satisfied} of {len(explained)} call counts as expected",
                            details, hits, misses)


# -- args and outputs --------------------------------------------------------------------


class ExpectedToolCall(BaseModel):
    """A call the agent should make: the tool, its arguments, and optionally its tool id."""

    model_config = ConfigDict(extra="forbid")

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class ExpectedToolOutput(BaseModel):
    """What a tool call should have returned, compared as exact text."""

    model_config = ConfigDict(extra="forbid")

    name: str
    output: str
    id: str | None = None

    @field_validator("output", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        """Structured expected outputs are compared as their JSON text."""
        return value if isinstance(value, str) else dump_json(value)


def _greedy(expected: list[Any], actual: list[ToolCallRecord],
            accept: Callable[[Any, ToolCallRecord], bool]) -> list[int | None]:
    """For each expected item, the index of the first unused actual call it accepts."""
    used: set[int] = set()
    chosen: list[int | None] = []
    for want in expected:
        pick = next((i for i, call in enumerate(actual) if i not in used and accept(want, call)),
                    None)
        if pick is not None:
            used.add(pick)
        chosen.append(pick)
    return chosen


def _explain(expected: list[Any], actual: list[ToolCallRecord], chosen: list[int | None],
             why_not: Callable[[Any], str]) -> list[dict[str, Any]]:
    explained = []
    for want, pick in zip(expected, chosen, strict=True):
        entry: dict[str, Any] = {"name": want.name, "matched": pick is not None,
                                 "actual_index": pick}
        if pick is None:
            entry["reason"] = why_not(want)
        explained.append(entry)
    return explained


@register
class ToolCallArgs(ToolCallEvaluator):
    """The fraction of expected calls made with the expected arguments (order ignored).

    Each expected call takes the first not yet used actual call of the same tool whose
    arguments match: all and only the expected arguments, or with ``subset`` at least them.
    Strict: 1.0 only when every expected call is matched.
    """

    type = "tool_call_args"
    subset: bool = False
    tool_calls: list[ExpectedToolCall] = Field(
        validation_alias=_alias("tool_calls", "toolCalls"))

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        actual = tool_calls(execution)
        expected = self.tool_calls

        def why_not(want: ExpectedToolCall) -> str:
            if any(matches_expected(c, want.name, want.id) for c in actual):
                return "called, but not with these arguments" + (
                    " (or those calls were matched already)" if len(expected) > 1 else "")
            return "never called"

        return self._greedy_score(
            expected, actual, lambda want, call: matches_expected(call, want.name, want.id)
            and args_match(want.args, call.args, self.subset),
            why_not, "explained_tool_calls_args", "calls had the expected arguments")

@register
class ToolCallOutput(ToolCallEvaluator):
    """The fraction of expected tool outputs an actual call returned, as exact text.

    Strict: 0.0 as soon as one expected output is not found.
    """

    type = "tool_call_output"
    tool_outputs: list[ExpectedToolOutput] = Field(
        validation_alias=_alias("tool_outputs", "toolOutputs"))

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        actual = tool_calls(execution)

        def why_not(want: ExpectedToolOutput) -> str:
            if any(matches_expected(c, want.name, want.id) for c in actual):
                return "called, but no unmatched call returned exactly this output"
            return "never called"

        return self._greedy_score(
            self.tool_outputs, actual, lambda want, call: matches_expected(
                call, want.name, want.id) and call.output is not None
            and call.output == want.output,
            why_not, "explained_tool_calls_outputs", "outputs were returned")
