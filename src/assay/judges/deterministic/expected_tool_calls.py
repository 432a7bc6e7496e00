"""``expected_tool_calls``: the deterministic check of a case's own expected tool calls.

A conversation case lists the calls it expects (``expected_tool_calls: [{tool,
expected_params}]``); the multi-metric judge weighs tool use as one of its 0-5 metrics, and
this evaluator checks the same expectation exactly: the fraction of expected calls the agent
made, each matched to the first unused call of that tool whose arguments include the expected
ones (all of them, with ``subset: false``). A case that expects no call is not applicable.
"""

from __future__ import annotations

from assay.judges.base import EvalContext
from assay.judges.deterministic.tool_calls import ExpectedToolCall, ToolCallEvaluator
from assay.judges.registry import register
from assay.traces.tools import args_match, matches_expected, tool_calls
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score


@register
class ExpectedToolCalls(ToolCallEvaluator):
    """The fraction of the case's ``expected_tool_calls`` made with the expected params."""

    type = "expected_tool_calls"
    subset: bool = True

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        if not case.expected_tool_calls:
            return Score.not_applicable(self.name, "the case lists no expected_tool_calls")
        expected = [ExpectedToolCall(name=e.tool, args=e.expected_params or {})
                    for e in case.expected_tool_calls]
        actual = tool_calls(execution)

        def why_not(want: ExpectedToolCall) -> str:
            if any(matches_expected(c, want.name, want.id) for c in actual):
                return "called, but not with the expected params"
            return "never called"

        return self._greedy_score(
            expected, actual, lambda want, call: matches_expected(call, want.name, want.id)
            and args_match(want.args, call.args, self.subset),
            why_not, "explained_expected_tool_calls", "calls were made")
