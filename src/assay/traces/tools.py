"""Tool calls read from a trace or messages, and the one rule that matches a call to an expected one."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay._util import jsondata
from assay._util.jsondata import same_data
from assay.types.execution import Execution
from assay.types.json import dump_json
from assay.types.messages import Message
from assay.types.spans import Span, mlflow_value, span_type

# -- tool calls --------------------------------------------------------------------------


class ToolCallRecord(BaseModel):
    """One tool call an agent made: what it called, with what, and what came back.

    ``id`` is the tool's own identity (the ``tool.id`` span attribute) and, when set, is what
    expected calls are matched against. OpenAI's per-call ids (``call_...``) are not tool
    identities, so calls read from messages carry no ``id``.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    output: str | None = None
    id: str | None = None
    duration_ms: float | None = None


def is_tool_span(span: Span) -> bool:
    """A span with a truthy ``tool.name``, or typed ``TOOL`` (OpenInference's span kind or
    MLflow's span type, named then by the span's name), not marked ``tool.synthesized``."""
    attributes = span.attributes
    if not attributes.get("tool.name"):
        # most spans have a type and few are tools: the type is read only if it could be TOOL
        kind = attributes.get("openinference.span.kind") or attributes.get("mlflow.spanType")
        if not (isinstance(kind, str) and "TOOL" in kind.upper() and span_type(span) == "TOOL"):
            return False
    return not _true(attributes.get("tool.synthesized"))


def _true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _first(attributes: Mapping[str, Any], openinference: str, mlflow: str) -> Any:
    """OpenInference's attribute, else MLflow's, decoded as MLflow stores it (JSON text)."""
    if openinference in attributes:
        return attributes[openinference]
    return mlflow_value(attributes.get(mlflow))


def parse_args(value: Any) -> dict[str, Any]:
    """Tool arguments from ``input.value``: JSON, else a Python literal; not a dict -> {}."""
    if isinstance(value, Mapping):
        return dict(value)
    if not isinstance(value, str):
        return {}
    try:
        parsed = jsondata.loads(value)
    except ValueError:
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return {}
    return dict(parsed) if isinstance(parsed, dict) else {}


def parse_output(value: Any) -> str | None:
    """A tool's output from ``output.value``, unwrapping a ``{"content": ...}`` envelope.

    A JSON object with ``content`` gives that content; other text (JSON or not) is kept as it
    is; an object without ``content`` is written as JSON.
    """
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parsed = jsondata.loads(value)
        except ValueError:
            return value
        if isinstance(parsed, dict) and "content" in parsed:
            return _text(parsed["content"])
        return value
    if isinstance(value, Mapping) and "content" in value:
        return _text(value["content"])
    return _text(value)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else dump_json(value)


def tool_calls_from_spans(spans: Iterable[Span]) -> list[ToolCallRecord]:
    """Tool calls from tool spans, in the order they started.

    Exporters emit spans as they end, so when every tool span has a start time the calls are
    put in start order (ties keep trace order); otherwise the trace's order is kept.
    """
    tools = [span for span in spans if is_tool_span(span)]
    if all(span.start_time is not None for span in tools):
        tools.sort(key=lambda span: span.start_time or 0.0)
    calls: list[ToolCallRecord] = []
    for span in tools:
        attributes = span.attributes
        tool_id = attributes.get("tool.id")
        duration = None
        if span.start_time is not None and span.end_time is not None:
            duration = max(0.0, (span.end_time - span.start_time) * 1000)
        calls.append(ToolCallRecord(
            name=str(attributes.get("tool.name") or span.name),
            args=parse_args(_first(attributes, "input.value", "mlflow.spanInputs")),
            output=parse_output(_first(attributes, "output.value", "mlflow.spanOutputs")),
            id=str(tool_id) if tool_id not in (None, "") else None,
            duration_ms=duration,
        ))
    return calls


def tool_calls_from_messages(messages: Iterable[Message]) -> list[ToolCallRecord]:
    """Tool calls from OpenAI-format messages, each paired with its ``tool`` reply by id."""
    messages = list(messages)
    replies = {m.tool_call_id: m.text() for m in messages
               if m.role == "tool" and m.tool_call_id is not None}
    calls: list[ToolCallRecord] = []
    for message in messages:
        if message.role != "assistant" or not message.tool_calls:
            continue
        for call in message.tool_calls:
            calls.append(ToolCallRecord(
                name=call.function.name,
                args=parse_args(call.function.arguments),
                output=replies.get(call.id) if call.id is not None else None,
            ))
    return calls


def tool_calls(execution: Execution) -> list[ToolCallRecord]:
    """The execution's tool calls: from its trace, else from its messages."""
    from_trace = tool_calls_from_spans(execution.trace)
    return from_trace if from_trace else tool_calls_from_messages(execution.messages)


# -- the one rule that says whether a call is the one expected --------------------------------
#
# Every tool evaluator (UiPath's order, count, args and outputs; AgentV's tool_trajectory;
# Connexity's expected_tool_calls) asks these functions, so one call is matched the same way
# by all of them:
#
# - names are compared sanitised (whitespace runs to ``_``, only ``[A-Za-z0-9_-]``, at most 64
#   characters, as LLM tool APIs accept them), case kept: ``search web`` is ``search_web``,
#   ``Search_Web`` is another tool;
# - a call that carries a tool id (a span's ``tool.id``) is named by that id: an expected id,
#   or an expectation's bare name used as a key; its own name is then not compared;
# - arguments are "any", or an expected dict matched against the call's: ``subset`` (partial:
#   every key given present, nested dicts partially, lists and scalars equal as data) or
#   exact (the same keys and equal values, all the way down); values are equal as data
#   (:func:`~assay._util.jsondata.same_data`: integers exactly, 1 == 1.0, ``True`` is not 1).


def sanitize_tool_name(name: str) -> str:
    """A name as LLM tool APIs accept it: whitespace runs to ``_``, only ``[A-Za-z0-9_-]``,
    at most 64 characters. Expected and actual names are compared in this form."""
    joined = "_".join(name.split())
    return re.sub(r"[^a-zA-Z0-9_-]", "", joined)[:64]


def match_key(call: ToolCallRecord) -> str:
    """What identifies a call when counting: its tool id if it has one, else its clean name."""
    return call.id if call.id else sanitize_tool_name(call.name)


def matches_key(call: ToolCallRecord, key: str) -> bool:
    """Whether a call is the one a bare string (an expected order or count entry) names:
    a call with a tool id by that id, one without by its name, both sides sanitised."""
    if call.id:
        return key == call.id
    return sanitize_tool_name(key) == sanitize_tool_name(call.name)


def matches_expected(call: ToolCallRecord, name: str, tool_id: str | None = None) -> bool:
    """Whether a call is an expected ``{name, id?}`` call: a call with a tool id is named by
    that id (the expected id, or with none the expected name as a bare key); a call without
    one matches by sanitised name."""
    if call.id:
        return (tool_id if tool_id is not None else name) == call.id
    return sanitize_tool_name(name) == sanitize_tool_name(call.name)


def args_match(expected: Any, actual: Any, subset: bool = True) -> bool:
    """Whether a call's arguments are the expected ones: ``expected`` None or ``"any"``
    accepts any; a dict is matched partially (``subset``: every key given present, nested
    dicts partially, everything else equal) or exactly (the same keys and equal values)."""
    if expected is None or (isinstance(expected, str) and expected == "any"):
        return True
    if not subset:
        return same_data(expected, actual)
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            key in actual and args_match(value, actual[key], subset=True)
            if isinstance(value, Mapping) else key in actual and same_data(value, actual[key])
            for key, value in expected.items())
    return same_data(expected, actual)
