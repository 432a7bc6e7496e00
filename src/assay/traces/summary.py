"""A short summary of a trace for the viewer."""

from __future__ import annotations

from collections import Counter
from typing import Any

from assay.traces.tools import tool_calls
from assay.types.execution import Execution


def trace_summary(execution: Execution) -> dict[str, Any]:
    """A compact view of what the agent did, so scripts need not parse traces themselves."""
    # Most executions have neither trace nor messages, and this runs for every result row.
    calls = tool_calls(execution) if execution.trace or execution.messages else []
    by_name = Counter(call.name for call in calls) if calls else Counter[str]()
    usage = execution.usage
    errors = sum(1 for span in execution.trace if span.status == "error")
    return {
        "event_count": len(execution.trace) + len(execution.messages),
        "tool_names": sorted(by_name),
        "tool_calls_by_name": dict(by_name),
        "error_count": errors + (1 if execution.error else 0),
        "token_usage": None if usage is None else {
            "input": usage.prompt_tokens, "output": usage.completion_tokens,
            "total": usage.total_tokens},
        "cost_usd": None if usage is None else usage.cost,
        "duration_ms": execution.latency_ms,
    }
