"""Tool trajectory: did the agent call the right tools, in the right order, fast enough?

AgentV's ``tool_trajectory`` has three modes:

``any_order``
    ``minimums: {tool: n}``; the score is the fraction of tools called at least n times.
``in_order``
    ``expected: [{tool, args?, max_duration_ms?}]`` must appear as a subsequence of the calls
    (other calls may come between). Each expected call is looked for after the previous match;
    one that is not found is a miss and the search goes on from the same place.
``exact``
    the calls must be the expected ones, position by position, and no more or fewer.

In the two sequence modes the score is (sequence hits + latency hits) / (expected calls +
latency assertions that had data): a ``max_duration_ms`` on a call that was not matched, or
whose duration is unknown, is left out rather than counted as a failure. As in AgentV, the
verdict follows the score, so it always agrees with the case: in ``exact`` mode a missing or
misplaced call lowers the score, while a call beyond the expected ones is reported as a miss
without changing it.

``args`` is ``"any"`` (the default) or a partial dict: every key given must be present with an
equal value (nested dicts partially, lists and scalars exactly). Names and arguments are
matched by the one rule every tool evaluator uses (:mod:`assay.traces.tools`).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

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
from assay.types.score import Score


class ExpectedCall(BaseModel):
    """One call the trajectory should contain."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    tool: str = Field(min_length=1)
    args: Literal["any"] | dict[str, Any] = "any"
    max_duration_ms: float | None = Field(default=None, ge=0, alias="maxDurationMs")

    def matches(self, call: ToolCallRecord) -> bool:
        return matches_expected(call, self.tool) and args_match(self.args, call.args)

    def label(self) -> str:
        args = "" if self.args == "any" else json.dumps(self.args, sort_keys=True)
        return f"{self.tool}({args})"


@register
class ToolTrajectory(Evaluator):
    """Scores the agent's tool calls against minimums or an expected sequence."""

    type = "tool_trajectory"
    mode: Literal["any_order", "in_order", "exact"]
    minimums: dict[str, int] | None = None
    expected: list[ExpectedCall] | None = None

    @field_validator("minimums")
    @classmethod
    def _non_negative(cls, minimums: dict[str, int] | None) -> dict[str, int] | None:
        if minimums is not None:
            bad = [tool for tool, n in minimums.items() if n < 0]
            if bad:
                raise ValueError(f"minimums for {', '.join(bad)} must be >= 0")
        return minimums

    @model_validator(mode="after")
    def _fits_mode(self) -> ToolTrajectory:
        if self.mode == "any_order":
            if not self.minimums:
                raise ValueError("mode any_order needs a non-empty 'minimums' {tool: count}")
            if self.expected is not None:
                raise ValueError("'expected' is for in_order and exact; any_order uses "
                                 "'minimums'")
        else:
            if not self.expected:
                raise ValueError(f"mode {self.mode} needs a non-empty 'expected' list")
            if self.minimums is not None:
                raise ValueError(f"'minimums' is for any_order; {self.mode} uses 'expected'")
        return self

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        calls = tool_calls(execution)
        if self.mode == "any_order":
            return self._any_order(calls)
        return self._sequence(calls)

    def _any_order(self, calls: list[ToolCallRecord]) -> Score:
        assert self.minimums
        counts = {tool: sum(1 for c in calls if matches_key(c, tool)) for tool in self.minimums}
        hits: list[str] = []
        misses: list[str] = []
        for tool, minimum in self.minimums.items():
            line = f"{tool}: called {counts[tool]} time(s), minimum {minimum}"
            (hits if counts[tool] >= minimum else misses).append(line)
        value = len(hits) / len(self.minimums)
        return Score(name=self.name, value=value, raw=counts, scale="fraction",
                     passed=self.verdict(value), hits=hits, misses=misses,
                     rationale=f"{len(hits)} of {len(self.minimums)} tools met their minimum",
                     details={"mode": self.mode, "counts": counts,
                              "calls": [c.name for c in calls]})

    def _sequence(self, calls: list[ToolCallRecord]) -> Score:
        assert self.expected
        matched = (self._match_in_order(calls) if self.mode == "in_order"
                   else self._match_exact(calls))
        hits: list[str] = []
        misses: list[str] = []
        latency_checked = latency_hits = 0
        for i, (want, call) in enumerate(zip(self.expected, matched, strict=True)):
            if call is None:
                misses.append(f"#{i + 1} {want.label()}: not found")
                continue
            hits.append(f"#{i + 1} {want.label()}: matched")
            if want.max_duration_ms is None or call.duration_ms is None:
                continue
            latency_checked += 1
            line = f"#{i + 1} {want.tool}: {call.duration_ms:.0f} ms (max {want.max_duration_ms:g})"
            if call.duration_ms <= want.max_duration_ms:
                latency_hits += 1
                hits.append(line)
            else:
                misses.append(line)
        sequence_hits = sum(1 for c in matched if c is not None)
        value = (sequence_hits + latency_hits) / (len(self.expected) + latency_checked)
        if self.mode == "exact" and len(calls) != len(self.expected):
            misses.append(f"expected exactly {len(self.expected)} tool calls, got {len(calls)}")
        return Score(
            name=self.name, value=value, scale="fraction", passed=self.verdict(value), hits=hits,
            misses=misses,
            raw={"sequence_hits": sequence_hits, "latency_hits": latency_hits,
                 "expected": len(self.expected), "latency_checked": latency_checked},
            rationale=f"{sequence_hits} of {len(self.expected)} expected calls matched "
                      f"({self.mode})",
            details={"mode": self.mode, "calls": [c.name for c in calls]})

    def _match_in_order(self, calls: list[ToolCallRecord]) -> list[ToolCallRecord | None]:
        assert self.expected
        found: list[ToolCallRecord | None] = []
        position = 0
        for want in self.expected:
            index = next((j for j in range(position, len(calls)) if want.matches(calls[j])),
                         None)
            if index is None:
                found.append(None)
            else:
                found.append(calls[index])
                position = index + 1
        return found

    def _match_exact(self, calls: list[ToolCallRecord]) -> list[ToolCallRecord | None]:
        assert self.expected
        return [calls[i] if i < len(calls) and want.matches(calls[i]) else None
                for i, want in enumerate(self.expected)]
