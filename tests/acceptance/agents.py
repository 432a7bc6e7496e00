"""Deterministic agents for the acceptance tests (Python targets, one call per turn).

``echo`` answers ``"echo: " + the last user text``; a case may record each turn's latency in
``metadata.turn_latencies_ms`` (else ``metadata.latency_ms`` for every turn). ``CALLS`` counts
calls per case id, so a test can see how often the agent was asked.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from assay.targets.base import current_sample
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.messages import Message

CALLS: Counter[str] = Counter()


def _last_user(case: Case) -> str:
    messages = case.input if isinstance(case.input, list) else []
    users = [m for m in messages if m.role == "user"]
    if users:
        return users[-1].text()
    return case.input if isinstance(case.input, str) else ""


def _latency(case: Case) -> float | None:
    turn = int(case.metadata.get("turn_index", 0))
    per_turn = case.metadata.get("turn_latencies_ms")
    if isinstance(per_turn, list) and turn < len(per_turn):
        return float(per_turn[turn])
    latency = case.metadata.get("latency_ms")
    return float(latency) if latency is not None else None


def echo(case: Case) -> Execution:
    CALLS[case.id] += 1
    return Execution(output=f"echo: {_last_user(case)}", latency_ms=_latency(case))


def caller(case: Case) -> Execution:
    """Echoes, and on its second turn of a case calls the tool ``end_call``."""
    CALLS[case.id] += 1
    if case.metadata.get("turn_index") == 1:
        message = Message.model_validate({
            "role": "assistant", "content": "Goodbye!",
            "tool_calls": [{"id": "end1", "type": "function",
                            "function": {"name": "end_call", "arguments": "{}"}}]})
        return Execution(messages=[message], latency_ms=_latency(case))
    return Execution(output=f"echo: {_last_user(case)}", latency_ms=_latency(case))


def order_desk(case: Case) -> Execution:
    """Looks the order up with a tool, then says it shipped (one turn, three messages)."""
    CALLS[case.id] += 1
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "lookup_order",
                                      "arguments": '{"order_id":"A-17"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"status":"shipped"}'},
        {"role": "assistant", "content": "It shipped."}]
    return Execution(messages=[Message.model_validate(m) for m in messages],
                     latency_ms=_latency(case))


def repeat_marker(question: str) -> str:
    """Answers with a marker naming the case's question and the repeat (``⟦Z-r1⟧``)."""
    marker = question.split("⟧")[0].lstrip("⟦")
    return f"⟦{marker}-r{current_sample()}⟧ here is the answer"
