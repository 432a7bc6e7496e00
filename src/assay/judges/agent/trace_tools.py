"""A judge that reads the agent's trace through tools, a bounded number of calls.

A ``make_judge`` whose instructions use ``{{ trace }}`` does not get the whole trace pasted
into its prompt (a long agent run would not fit, and most of it is beside the point). As in
MLflow 3, it gets an overview (the trace's id, duration and spans by name) and tools to read
what it needs, named as MLflow names them:

- ``get_trace_info``: the trace's id, duration, state, span count, request and response;
- ``list_spans``: every span's id, name, type, parent, status and duration (paged);
- ``get_root_span`` / ``get_span``: one span in full (attributes, events), cut to
  ``max_content_length`` characters with a page token for the rest;
- ``search_trace_regex``: matches of a pattern anywhere in the trace, with context.

The loop is bounded by the judge's ``max_tool_calls`` (20 by default): once it is reached,
the judge is told so and asked for its verdict with what it has read, so a judge that would
call tools for ever (MLflow's 150-call loop on a row without output) costs at most that many
calls and still answers. The verdict itself is asked for as every judge answer is (the
answer schema, re-asks, ``judge_output_invalid``). A model that cannot call tools gets the
trace as JSON in its prompt instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from assay._util import jsondata
from assay.llm.engine import JudgeEngine
from assay.llm.structured import StructuredResult, ask_structured, bounded
from assay.llm.types import ChatRequest, ProviderError, RequestRejected
from assay.types.execution import Execution
from assay.types.json import dump_json
from assay.types.score import ScoreError
from assay.types.spans import Span, root_span, span_input, span_output
from assay.types.usage import Usage

T = TypeVar("T", bound=BaseModel)

MAX_TOOL_CALLS = 20
"""Tool calls a trace judge may make by default before it must answer."""
CONTENT_CHARS = 20_000
"""The most of one span, or of the trace's request and response, a tool returns at once."""
PATTERN_CHARS = 300
"""The longest pattern ``search_trace_regex`` accepts."""
SEARCHED_CHARS = 2_000_000
"""How much of the trace's text a search reads (a pattern runs over this much at most)."""


def _function(name: str, description: str, properties: dict[str, Any],
              required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties,
                       "required": required or []}}}


TOOLS: list[dict[str, Any]] = [
    _function("get_trace_info", "The trace's id, duration in ms, state, number of spans, "
              "and the agent's request and response (cut to 20,000 characters).", {}),
    _function("list_spans", "Every span's id, name, type, parent id, status and duration in "
              "ms, in trace order, without their content.", {
                  "max_results": {"type": "integer", "description": "spans per page (100)"},
                  "page_token": {"type": "string", "description": "the next page's token"}}),
    _function("get_root_span", "The root span in full: inputs, outputs, attributes, events.",
              {"max_content_length": {"type": "integer"},
               "page_token": {"type": "string"}}),
    _function("get_span", "One span in full by its id: inputs, outputs, attributes, events.",
              {"span_id": {"type": "string"},
               "attributes_to_fetch": {"type": "array", "items": {"type": "string"},
                                       "description": "only these attributes"},
               "max_content_length": {"type": "integer"},
               "page_token": {"type": "string"}}, ["span_id"]),
    _function("search_trace_regex", "Case-insensitive matches of a regular expression "
              "anywhere in the trace, each with the text around it.", {
                  "pattern": {"type": "string"},
                  "max_matches": {"type": "integer", "description": "at most (50)"},
                  "surrounding_content_length": {"type": "integer",
                                                 "description": "characters each side (100)"}},
              ["pattern"]),
]
NAMES = tuple(t["function"]["name"] for t in TOOLS)


@dataclass
class TraceReader:
    """The tools over one execution's trace; each returns JSON-ready data, or an error."""

    execution: Execution
    calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def spans(self) -> list[Span]:
        return self.execution.trace

    def overview(self) -> str:
        """What the prompt shows in place of ``{{ trace }}``."""
        names = ", ".join(s.name for s in self.spans[:30])
        more = f" and {len(self.spans) - 30} more" if len(self.spans) > 30 else ""
        return (f"A trace of {len(self.spans)} span(s) ({names}{more}). Read it with the "
                f"tools {', '.join(NAMES)}.")

    def call(self, name: str, raw_arguments: Any) -> Any:
        """Run tool ``name``; an unknown tool or bad arguments are the call's error."""
        try:
            arguments = jsondata.loads(raw_arguments) if isinstance(raw_arguments, str) and \
                raw_arguments.strip() else raw_arguments or {}
        except ValueError:
            return {"error": "the arguments are not JSON"}
        if not isinstance(arguments, dict):
            return {"error": "the arguments must be a JSON object"}
        self.calls.append({"name": name, "arguments": arguments})
        handlers: dict[str, Callable[..., Any]] = {
            "get_trace_info": self.trace_info, "list_spans": self.list_spans,
            "get_root_span": self.root_span, "get_span": self.get_span,
            "search_trace_regex": self.search}
        handler = handlers.get(name)
        if handler is None:
            return {"error": f"no tool {name!r}; the tools are {', '.join(NAMES)}"}
        try:
            return handler(**arguments)
        except TypeError as exc:
            return {"error": f"bad arguments for {name}: {exc}"}

    def trace_info(self) -> dict[str, Any]:
        info = self.execution.trace_info or {}
        return {"trace_id": info.get("trace_id"), "execution_duration_ms":
                self.execution.latency_ms, "state": "ERROR" if self.execution.error else "OK",
                "span_count": len(self.spans),
                "request": bounded(_text(self.execution.input), CONTENT_CHARS),
                "response": bounded(_text(self.execution.output), CONTENT_CHARS)}

    def list_spans(self, max_results: int = 100, page_token: str | None = None
                   ) -> dict[str, Any]:
        start = _page(page_token)
        size = max(1, min(int(max_results), 500))
        page = self.spans[start:start + size]
        found: dict[str, Any] = {"spans": [_summary(s) for s in page]}
        if start + size < len(self.spans):
            found["next_page_token"] = str(start + size)
        return found

    def root_span(self, max_content_length: int = CONTENT_CHARS,
                  page_token: str | None = None) -> dict[str, Any]:
        root = root_span(self.spans)
        if root is None:
            return {"error": "the trace has no spans"}
        return _content(root, None, max_content_length, page_token)

    def get_span(self, span_id: str, attributes_to_fetch: list[str] | None = None,
                 max_content_length: int = CONTENT_CHARS,
                 page_token: str | None = None) -> dict[str, Any]:
        found = next((s for s in self.spans if s.span_id == str(span_id)), None)
        if found is None:
            return {"error": f"no span {span_id!r}; list_spans gives the ids"}
        return _content(found, attributes_to_fetch, max_content_length, page_token)

    def search(self, pattern: str, max_matches: int = 50,
               surrounding_content_length: int = 100) -> dict[str, Any]:
        if not isinstance(pattern, str) or not pattern or len(pattern) > PATTERN_CHARS:
            return {"error": f"pattern must be text of 1 to {PATTERN_CHARS} characters"}
        try:
            regex = re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            return {"error": f"invalid pattern: {exc}"}
        around = max(0, min(int(surrounding_content_length), 1000))
        limit = max(1, min(int(max_matches), 200))
        matches = []
        for span in self.spans:
            text = dump_json(span.model_dump(mode="json", exclude_none=True))[:SEARCHED_CHARS]
            for match in regex.finditer(text):
                matches.append({"span_id": span.span_id, "span_name": span.name,
                                "matched_text": match.group(0)[:200],
                                "context": text[max(0, match.start() - around):
                                                match.end() + around]})
                if len(matches) >= limit:
                    return {"pattern": pattern, "matches": matches, "truncated": True}
        return {"pattern": pattern, "matches": matches}


def _summary(span: Span) -> dict[str, Any]:
    duration = None if span.start_time is None or span.end_time is None else \
        round((span.end_time - span.start_time) * 1000, 3)
    kind = span.attributes.get("mlflow.spanType", span.attributes.get(
        "openinference.span.kind", span.kind))
    if isinstance(kind, str):
        kind = kind.strip('"')
    return {"span_id": span.span_id, "name": span.name, "span_type": kind,
            "parent_id": span.parent_id, "status": span.status, "duration_ms": duration,
            "attribute_names": sorted(span.attributes)}


def _content(span: Span, only: list[str] | None, limit: Any,
             page_token: str | None) -> dict[str, Any]:
    attributes = span.attributes if not only else \
        {k: v for k, v in span.attributes.items() if k in only}
    whole = dump_json({**_summary(span), "inputs": span_input(span),
                       "outputs": span_output(span), "attributes": attributes,
                       "events": span.events})
    size = max(100, min(int(limit) if isinstance(limit, int) else CONTENT_CHARS,
                        CONTENT_CHARS))
    start = _page(page_token)
    found: dict[str, Any] = {"content": whole[start:start + size]}
    if start + size < len(whole):
        found["next_page_token"] = str(start + size)
    return found


def _page(token: str | None) -> int:
    try:
        return max(0, int(token)) if token else 0
    except ValueError:
        return 0


def _text(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else dump_json(value)


@dataclass
class ToolLoop:
    """What a trace judge's tool loop did: its calls, whether it hit the bound, its cost."""

    reader: TraceReader
    usage: Usage = field(default_factory=Usage)
    limit_reached: bool = False
    refused: bool = False
    """The model cannot call tools (the provider refused them): nothing was asked."""
    error: ScoreError | None = None


def can_call_tools(engine: JudgeEngine, model: str | None) -> bool:
    """Whether the judge model is asked in a mode that allows tools (not JSON in a prompt)."""
    return engine.resolve(model).structured_mode != "prompt"


async def ask_with_trace(engine: JudgeEngine, messages: list[dict[str, Any]],
                         schema: type[T], reader: TraceReader, *, model: str | None,
                         max_tool_calls: int, name: str, temperature: float = 0.0,
                         sample: int = 0) -> tuple[StructuredResult[T] | None, ToolLoop]:
    """Let the judge call the trace tools (at most ``max_tool_calls`` calls), then ask for
    its verdict in ``schema`` with everything it read. (None, loop) when the model refused
    the tools (``loop.refused``): the caller asks another way."""
    loop = ToolLoop(reader)
    conversation = await _read(engine, model, [dict(m) for m in messages], loop,
                               max_tool_calls, temperature, sample)
    if loop.refused:
        return None, loop
    if loop.error is not None:
        return StructuredResult(None, "", loop.error, loop.usage), loop
    final = {"role": "user", "content": (
        "You have used every tool call allowed. " if loop.limit_reached else "") +
        "Give your verdict now, from what you have read of the trace, as the JSON object "
        "asked for."}
    result = await ask_structured(engine, [*conversation, final], schema, model=model,
                                  name=name, temperature=temperature, sample=sample)
    result.usage = loop.usage + result.usage
    return result, loop


async def _read(engine: JudgeEngine, model: str | None, conversation: list[dict[str, Any]],
                loop: ToolLoop, max_tool_calls: int, temperature: float,
                sample: int) -> list[dict[str, Any]]:
    """The tool loop: ask, run the tools it calls, ask again, until it stops calling or the
    bound is reached. A model that refuses tools leaves the conversation as it was."""
    made = 0
    while True:
        request: ChatRequest = {"model": engine.resolve(model).spec.model,
                                "messages": conversation, "tools": TOOLS,
                                "tool_choice": "auto", "temperature": temperature}
        try:
            result = await engine.chat(request, model, sample=sample)
        except RequestRejected as exc:
            if "tool" not in str(exc).lower():
                loop.error = ScoreError(code=exc.code, message=str(exc))
            else:
                loop.refused = True
            return conversation
        except ProviderError as exc:
            loop.error = ScoreError(code=exc.code, message=str(exc))
            return conversation
        stats = result.stats
        loop.usage = loop.usage + (Usage(cached_calls=1, cost=0.0) if stats.cached else Usage(
            calls=1, retries=max(0, stats.attempts - 1), prompt_tokens=stats.prompt_tokens,
            completion_tokens=stats.completion_tokens, cost=stats.cost))
        message = result.message()
        calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
        if not calls:
            return conversation
        allowed = calls[:max(0, max_tool_calls - made)]
        conversation = [*conversation, {"role": "assistant", "content": message.get("content"),
                                        "tool_calls": allowed}] if allowed else conversation
        for call in allowed:
            function = call.get("function") or {}
            answer = loop.reader.call(str(function.get("name")), function.get("arguments"))
            conversation.append({"role": "tool", "tool_call_id": call.get("id"),
                                 "content": bounded(dump_json(answer), CONTENT_CHARS)})
        made += len(allowed)
        if made >= max_tool_calls or len(allowed) < len(calls):
            loop.limit_reached = True
            return conversation
