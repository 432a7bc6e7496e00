"""What the case page shows of an agent's trace: the span tree with each span's kind (LLM,
tool, retriever...), its place on a timing waterfall, its tokens and cost; and, for the tool
evaluators, which expected call matched which actual call, and why not.

The kinds come from the traces' own conventions (OpenInference's ``openinference.span.kind``,
MLflow's ``mlflow.spanType``, a ``tool.name`` attribute, OpenTelemetry's ``gen_ai.*``), read
through :mod:`assay.traces`; a call's match is the tool evaluator's own, as it recorded it in
its score, with the calls of the same tool found by :func:`assay.traces.tools.matches_expected`.
Numbers are shown by :mod:`assay.types.numbers`.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from assay.traces.retrieval import span_type
from assay.traces.tools import ToolCallRecord, is_tool_span, matches_expected
from assay.types import numbers
from assay.types.execution import Execution
from assay.types.score import Score
from assay.types.spans import Span

MAX_SPANS = 2_000
"""The most spans a tree shows (the rest are counted)."""
PREVIEW_CHARS = 2_000
TOKEN_KEYS = {
    "prompt": ("llm.token_count.prompt", "gen_ai.usage.input_tokens",
               "gen_ai.usage.prompt_tokens"),
    "completion": ("llm.token_count.completion", "gen_ai.usage.output_tokens",
                   "gen_ai.usage.completion_tokens"),
}
COST_KEYS = ("llm.cost.total", "gen_ai.usage.cost", "cost_usd", "cost")
MODEL_KEYS = ("llm.model_name", "gen_ai.response.model", "gen_ai.request.model", "model")
INPUT_KEYS = ("input.value", "gen_ai.prompt", "mlflow.spanInputs")
OUTPUT_KEYS = ("output.value", "gen_ai.completion", "mlflow.spanOutputs")


class SpanNode(BaseModel):
    """One span in the tree, in the order a reader goes down it."""

    index: int
    parent: int | None = None
    depth: int = 0
    name: str
    kind: str = Field(description="LLM, TOOL, RETRIEVER, CHAIN, AGENT... or SPAN")
    status: str = "unset"
    start: str = Field(description="when it started, after the trace's first span")
    duration: str
    offset: float = Field(description="where its bar starts on the waterfall, 0-1")
    width: float = Field(description="how long its bar is on the waterfall, 0-1")
    tokens: str = ""
    cost: str = ""
    model: str | None = None
    input: str | None = None
    output: str | None = None


class TraceView(BaseModel):
    """An execution's trace as a tree and a waterfall."""

    spans: list[SpanNode] = Field(default_factory=list)
    spans_not_shown: int = 0
    duration: str = numbers.MISSING
    llm_calls: int = 0
    tool_calls: int = 0
    tokens: str = ""
    cost: str = ""


class ToolMatchLine(BaseModel):
    """An expected tool call, and the actual call it matched or the calls of its tool."""

    expected: str
    expected_args: str | None = None
    matched: bool
    actual_index: int | None = None
    actual_args: list[str] = Field(default_factory=list, description="the matched call's "
                                   "arguments, or those of every call of the same tool")
    reason: str | None = None


class ToolMatchView(BaseModel):
    """A tool evaluator's matching of expected calls to actual ones."""

    evaluator: str
    lines: list[ToolMatchLine] = Field(default_factory=list)
    actual: list[str] = Field(default_factory=list, description="every actual call")


def _first(attributes: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((attributes[k] for k in keys if attributes.get(k) not in (None, "")), None)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _preview(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=str)
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"


def span_kind(span: Span) -> str:
    """What a span is: its declared type, a tool span, an LLM call, or a plain span."""
    declared = span_type(span)
    if declared:
        return declared
    if is_tool_span(span):
        return "TOOL"
    if any(k.startswith("gen_ai.") or k.startswith("llm.") for k in span.attributes):
        return "LLM"
    return "SPAN"


def _ordered(spans: list[Span]) -> list[tuple[Span, int | None, int]]:
    """The spans depth first (children by start time), each with its parent's position in
    the list and its depth; spans whose parent is missing are roots; a loop is cut."""
    by_id = {s.span_id: s for s in spans if s.span_id}
    children: dict[str | None, list[Span]] = {}
    for span in spans:
        above = span.parent_id if span.parent_id in by_id and span.parent_id != span.span_id \
            else None
        children.setdefault(above, []).append(span)
    for group in children.values():
        group.sort(key=lambda s: (s.start_time is None, s.start_time or 0.0))
    found: list[tuple[Span, int | None, int]] = []
    seen: set[int] = set()
    stack: list[tuple[Span, int | None, int]] = [(s, None, 0) for s in
                                                 reversed(children.get(None, []))]
    while stack:
        span, parent, depth = stack.pop()
        if id(span) in seen:
            continue
        seen.add(id(span))
        found.append((span, parent, depth))
        here = len(found) - 1
        stack += [(c, here, depth + 1) for c in reversed(children.get(span.span_id, []))
                  if span.span_id]
    found += [(s, None, 0) for s in spans if id(s) not in seen]  # in a loop: shown flat
    return found


def trace_view(execution: Execution) -> TraceView | None:
    """The execution's trace as a tree with a waterfall; None without a trace."""
    spans = execution.trace
    if not spans:
        return None
    starts = [s.start_time for s in spans if s.start_time is not None]
    ends = [s.end_time for s in spans if s.end_time is not None]
    first = min(starts) if starts else None
    total = (max(ends) - first) if first is not None and ends else None
    view = TraceView(duration=numbers.milliseconds(None if total is None else total * 1000))
    prompt = completion = 0
    cost: float | None = None
    for position, (span, parent, depth) in enumerate(_ordered(spans)):
        attributes = span.attributes
        kind = span_kind(span)
        view.llm_calls += kind == "LLM"
        view.tool_calls += kind == "TOOL"
        p = _number(_first(attributes, TOKEN_KEYS["prompt"]))
        c = _number(_first(attributes, TOKEN_KEYS["completion"]))
        spent = _number(_first(attributes, COST_KEYS))
        prompt += int(p or 0)
        completion += int(c or 0)
        if spent is not None:
            cost = (cost or 0.0) + spent
        if position >= MAX_SPANS:
            view.spans_not_shown += 1
            continue
        start = None if span.start_time is None or first is None else span.start_time - first
        length = None if span.start_time is None or span.end_time is None else \
            max(0.0, span.end_time - span.start_time)
        view.spans.append(SpanNode(
            index=position, parent=parent, depth=depth, name=span.name, kind=kind,
            status=span.status, start=numbers.milliseconds(None if start is None
                                                           else start * 1000),
            duration=numbers.milliseconds(None if length is None else length * 1000),
            offset=0.0 if start is None or not total else min(1.0, start / total),
            width=0.0 if length is None or not total else min(1.0, length / total),
            tokens=_tokens(p, c), cost=numbers.usd(spent) if spent is not None else "",
            model=_text(_first(attributes, MODEL_KEYS)),
            input=_preview(_first(attributes, INPUT_KEYS)),
            output=_preview(_first(attributes, OUTPUT_KEYS))))
    view.tokens = _tokens(prompt or None, completion or None)
    view.cost = numbers.usd(cost) if cost is not None else ""
    return view


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _tokens(prompt: float | None, completion: float | None) -> str:
    if prompt is None and completion is None:
        return ""
    return (f"{numbers.count(int(prompt or 0))} in · "
            f"{numbers.count(int(completion or 0))} out")


def _args(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def tool_matches(scores: list[Score]) -> list[ToolMatchView]:
    """Each tool evaluator's matching, as its score recorded it: for every expected call,
    the actual call it matched, or the calls of the same tool and why none fitted."""
    views = []
    for score in scores:
        details = score.details or {}
        expected, actual = details.get("expected"), details.get("actual")
        explained = next((v for k, v in details.items() if k.startswith("explained")
                          and isinstance(v, list)), None)
        if not isinstance(expected, list) or not isinstance(actual, list) or explained is None:
            continue
        calls = [ToolCallRecord.model_validate(c) for c in actual if isinstance(c, dict)]
        view = ToolMatchView(evaluator=score.name,
                             actual=[f"{c.name}({_args(c.args)})" for c in calls])
        for want, entry in zip(expected, explained, strict=False):
            if not isinstance(want, dict) or not isinstance(entry, dict):
                continue
            name = str(want.get("name") or entry.get("name") or "")
            pick = entry.get("actual_index")
            if isinstance(pick, int) and 0 <= pick < len(calls):
                shown = [_args(calls[pick].args) or "{}"]
            else:
                shown = [_args(c.args) or "{}" for c in calls
                         if matches_expected(c, name, want.get("id"))]
            view.lines.append(ToolMatchLine(
                expected=name, expected_args=_args(want.get("args")),
                matched=bool(entry.get("matched")), actual_index=pick
                if isinstance(pick, int) else None, actual_args=shown,
                reason=entry.get("reason")))
        views.append(view)
    return views


__all__ = ["SpanNode", "ToolMatchLine", "ToolMatchView", "TraceView", "span_kind",
           "tool_matches", "trace_view"]
