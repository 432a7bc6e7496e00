"""One trace in, one :class:`Execution` out: the one reader every trace source goes through.

Traces come from the OTLP receiver, MLflow, Phoenix and Langfuse; whatever the source, its
spans are normalised to :class:`~assay.types.spans.Span` first and read here, so a trace from
any of them becomes the same execution: the root span's input and output, the spans themselves
(from which :mod:`assay.traces.tools` reads the tool calls and :mod:`assay.traces.retrieval`
the retrieved documents), the latency of the root span and the tokens of the model calls.

What a trace lacks is said, never guessed: each gap is a note on the :class:`TraceReading`
(no root span, no input, no output, no token counts, a span that ends before it starts), and
the field stays empty.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay._util import jsondata
from assay.types.execution import Execution, TokenUsage
from assay.types.spans import Span

INPUT_KEYS = ("input.value", "mlflow.spanInputs", "gen_ai.input.messages", "gen_ai.prompt",
              "langfuse.observation.input", "langfuse.trace.input")
"""Where a root span keeps what the agent was asked, in the order they are looked for:
OpenInference, MLflow, OpenTelemetry's GenAI conventions, Langfuse."""
OUTPUT_KEYS = ("output.value", "mlflow.spanOutputs", "gen_ai.output.messages",
               "gen_ai.completion", "langfuse.observation.output", "langfuse.trace.output")
PROMPT_TOKEN_KEYS = ("llm.token_count.prompt", "gen_ai.usage.input_tokens",
                     "gen_ai.usage.prompt_tokens")
COMPLETION_TOKEN_KEYS = ("llm.token_count.completion", "gen_ai.usage.output_tokens",
                         "gen_ai.usage.completion_tokens")
MLFLOW_TOKENS = "mlflow.chat.tokenUsage"
CUT_ATTRIBUTE = "assay.cut_attributes"
"""The attribute listing a span's values that were cut to fit the store (the receiver's)."""


@dataclass
class TraceReading:
    """What a trace says as an execution, and what it does not say (``notes``)."""

    trace_id: str
    execution: Execution
    notes: list[str] = field(default_factory=list)
    root: Span | None = None
    start_time: float | None = None
    """When the trace's root span started (seconds since the epoch), if it says."""

    @property
    def failed(self) -> bool:
        """Whether a span of the trace ended in error."""
        return any(span.status == "error" for span in self.execution.trace)


def read_trace(trace_id: str, spans: Sequence[Span]) -> TraceReading:
    """The execution ``spans`` (one trace's) describe, with a note for each thing missing."""
    notes: list[str] = []
    root = _root(spans, notes)
    skewed = [s for s in spans if s.start_time is not None and s.end_time is not None
              and s.end_time < s.start_time]
    if skewed:
        notes.append(f"{len(skewed)} span(s) end before they start (clock skew), first "
                     f"{skewed[0].name!r}: their durations are unknown")
    cut = [c for s in spans for c in s.attributes.get(CUT_ATTRIBUTE) or ()]
    if cut:
        notes.append(f"{len(cut)} attribute value(s) were cut to fit the store, first "
                     f"{cut[0]}")
    execution = Execution(
        input=_question(_value(root, INPUT_KEYS, "input", notes, case_input=True)),
        output=_answer(_value(root, OUTPUT_KEYS, "output", notes)),
        trace=list(spans), latency_ms=_latency(root, notes), usage=_usage(spans, notes),
        error=_error(root))
    return TraceReading(trace_id=trace_id, execution=execution, notes=notes, root=root,
                        start_time=root.start_time if root is not None else None)


def _root(spans: Sequence[Span], notes: list[str]) -> Span | None:
    """The one span without a parent in the trace; when several are, the earliest (said)."""
    if not spans:
        notes.append("the trace has no spans")
        return None
    ids = {s.span_id for s in spans if s.span_id}
    roots = [s for s in spans if not s.parent_id or s.parent_id not in ids]
    if not roots:
        notes.append("no root span: every span names a parent in the trace (a cycle)")
        return None
    roots.sort(key=lambda s: s.start_time if s.start_time is not None else float("inf"))
    if len(roots) > 1:
        notes.append(f"{len(roots)} spans have no parent in the trace (its root was not "
                     f"received, or it has several): read from the earliest, {roots[0].name!r}")
    return roots[0]


def _value(root: Span | None, keys: Iterable[str], what: str, notes: list[str],
           case_input: bool = False) -> Any:
    if root is None:
        return "" if case_input else None
    for key in keys:
        if key in root.attributes and root.attributes[key] not in (None, ""):
            value = _parsed(root.attributes[key])
            if case_input and not isinstance(value, str | dict):
                value = json.dumps(value, ensure_ascii=False)  # a list of anything, a number
            return value
    notes.append(f"no {what}: the root span {root.name!r} has none of "
                 f"{', '.join(keys)}")
    return "" if case_input else None


def _parsed(value: Any) -> Any:
    """JSON text as the data it holds (MLflow and OpenInference write inputs as JSON text);
    other text as it is."""
    if isinstance(value, str) and value[:1] in ("{", "[", '"'):
        try:
            return jsondata.loads(value)
        except ValueError:
            return value
    return value


def _question(value: Any) -> Any:
    """A chat request's last user message (an LLM span's input is the whole request);
    any other input as it is."""
    messages = value.get("messages") if isinstance(value, Mapping) else None
    if isinstance(messages, list):
        users = [m for m in messages if isinstance(m, Mapping) and m.get("role") == "user"]
        content = users[-1].get("content") if users else None
        if isinstance(content, str):
            return content
    return value


def _answer(value: Any) -> Any:
    """A chat completion's first choice's text (an LLM span's output is the whole
    response); any other output as it is."""
    choices = value.get("choices") if isinstance(value, Mapping) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        message = choices[0].get("message")
        if isinstance(message, Mapping) and isinstance(message.get("content"), str):
            return message["content"]
    return value


def _latency(root: Span | None, notes: list[str]) -> float | None:
    if root is None:
        return None
    if root.start_time is None or root.end_time is None:
        notes.append(f"no latency: the root span {root.name!r} has no "
                     f"{'start' if root.start_time is None else 'end'} time")
        return None
    if root.end_time < root.start_time:
        return None  # said with the clock skew
    return (root.end_time - root.start_time) * 1000


def _usage(spans: Sequence[Span], notes: list[str]) -> TokenUsage | None:
    """The tokens of the spans that count them and have no descendant that does (a parent
    that sums its children's tokens is not counted twice)."""
    unreadable: list[str] = []
    counted = {id(s): c for s in spans if (c := _tokens(s, unreadable)) is not None}
    if unreadable:
        notes.append(f"{len(unreadable)} token count(s) are not counts and were not "
                     f"counted, first {unreadable[0]}")
    if not counted:
        notes.append("no token counts: no span has " + ", ".join(
            (*PROMPT_TOKEN_KEYS[:2], *COMPLETION_TOKEN_KEYS[:2], MLFLOW_TOKENS)))
        return None
    parents = {s.span_id: s.parent_id for s in spans if s.span_id}
    by_id = {s.span_id: s for s in spans if s.span_id}
    has_counted_child: set[str] = set()
    for span in spans:
        if id(span) not in counted:
            continue
        seen: set[str] = set()
        parent = span.parent_id
        while parent and parent not in seen and parent in by_id:
            seen.add(parent)
            has_counted_child.add(parent)
            parent = parents.get(parent)
    prompt = completion = 0
    for span in spans:
        if id(span) in counted and span.span_id not in has_counted_child:
            prompt += counted[id(span)][0]
            completion += counted[id(span)][1]
    return TokenUsage(prompt_tokens=prompt, completion_tokens=completion)


def _tokens(span: Span, unreadable: list[str]) -> tuple[int, int] | None:
    """The span's (prompt, completion) tokens, None when it counts none; a count that is
    not one (text, a fraction, infinity) adds nothing and is listed in ``unreadable``."""
    attributes = span.attributes
    usage = _parsed(attributes.get(MLFLOW_TOKENS))
    if isinstance(usage, Mapping):
        keys = [f"{MLFLOW_TOKENS}.input_tokens", f"{MLFLOW_TOKENS}.output_tokens"]
        values = [usage.get("input_tokens"), usage.get("output_tokens")]
    else:
        keys = [next((k for k in group if k in attributes), group[0])
                for group in (PROMPT_TOKEN_KEYS, COMPLETION_TOKEN_KEYS)]
        values = [attributes.get(k) for k in keys]
        if values == [None, None]:
            return None
    prompt, completion = (_count(v, span, k, unreadable) for k, v in zip(keys, values,
                                                                         strict=True))
    return prompt, completion


def _count(value: Any, span: Span, key: str, unreadable: list[str]) -> int:
    """A token count as a whole number of tokens; 0 for none, and for one that is not a
    count, which is listed (an error is never read as a zero unsaid)."""
    if value is None:
        return 0
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        try:
            number = float(value)
        except (ValueError, OverflowError):
            number = math.nan
        if number.is_integer() and number >= 0:
            return int(number)
    unreadable.append(f"span {span.name[:80]!r} {key} {str(value)[:40]!r}")
    return 0


def _error(root: Span | None) -> str | None:
    """The root span's error, as the execution's: a trace that failed is judged as failed."""
    if root is None or root.status != "error":
        return None
    description = root.attributes.get("otel.status_description") or \
        root.attributes.get("exception.message")
    return f"the trace's root span {root.name!r} ended in error" + (
        f": {description}" if description else "")
