"""What evaluators read from an execution's trace: tool calls and retrieved documents.

Spans arrive already normalised (:mod:`assay.spans` reads OpenTelemetry, OTLP and dict
traces). This is the one place that decides which calls an agent made, so every tool-call and
trajectory evaluator judges the same list. From spans, :func:`tool_calls` finds the tools an agent called (spans with a ``tool.name``
attribute, OpenInference style) and :func:`retrievals` the documents it retrieved (spans of
kind ``RETRIEVER``). An execution without tool spans falls back to the tool calls in its
OpenAI-format messages, so the tool-call evaluators work without any tracing.
"""

from __future__ import annotations

import ast
import contextlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.model import Execution, Message, RetrievedDocument, dump_json
from assay.spans import Span, TraceFormatError, normalize_trace

__all__ = [
    "Chunk",
    "Retrieval",
    "RetrievedContext",
    "Span",
    "ToolCallRecord",
    "TraceFormatError",
    "normalize_trace",
    "retrievals",
    "retrieved_context",
    "tool_calls",
    "top_level_retrievers",
    "trace_summary",
]

DOCUMENT_ATTRIBUTE = re.compile(r"retrieval\.documents\.(\d+)\.document\.(.+)")

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
    """A span with a truthy ``tool.name`` that is not marked ``tool.synthesized``."""
    attributes = span.attributes
    return bool(attributes.get("tool.name")) and not _true(attributes.get("tool.synthesized"))


def _true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def parse_args(value: Any) -> dict[str, Any]:
    """Tool arguments from ``input.value``: JSON, else a Python literal; not a dict -> {}."""
    if isinstance(value, Mapping):
        return dict(value)
    if not isinstance(value, str):
        return {}
    try:
        parsed = json.loads(value)
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
            parsed = json.loads(value)
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
            name=str(attributes["tool.name"]),
            args=parse_args(attributes.get("input.value")),
            output=parse_output(attributes.get("output.value")),
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


def sanitize_tool_name(name: str) -> str:
    """A name as LLM tool APIs accept it: whitespace runs to ``_``, only ``[A-Za-z0-9_-]``,
    at most 64 characters. Expected and actual names are compared in this form."""
    joined = "_".join(name.split())
    return re.sub(r"[^a-zA-Z0-9_-]", "", joined)[:64]


def match_key(call: ToolCallRecord) -> str:
    """What identifies a call when counting: its tool id if it has one, else its clean name."""
    return call.id if call.id else sanitize_tool_name(call.name)


def matches_key(call: ToolCallRecord, key: str) -> bool:
    """Whether a call is the one a bare string (an expected order or count entry) names.

    A call with a tool id is named only by that id; a call without one by its name, both
    sides sanitised.
    """
    if call.id:
        return key == call.id
    return sanitize_tool_name(key) == sanitize_tool_name(call.name)


def matches_expected(call: ToolCallRecord, name: str, tool_id: str | None) -> bool:
    """Whether a call is an expected ``{name, id?}`` call.

    A call with a tool id matches only the same expected id; a call without one matches by
    sanitised name. An id is never compared with a name.
    """
    if call.id:
        return tool_id == call.id
    return sanitize_tool_name(name) == sanitize_tool_name(call.name)


# -- retrievals --------------------------------------------------------------------------

TEXT_KEYS = ("page_content", "content", "text")
"""Where a document's text is, in order of preference (LangChain, MLflow, LlamaIndex)."""
URI_KEYS = ("doc_uri", "uri", "url", "source")


class Retrieval(BaseModel):
    """One retrieval step: the query, and the documents that came back, in rank order.

    ``documents`` holds the documents that have text. A document with no recognised text field
    is not turned into text (its JSON would be judged as if it were the document); its
    position among the span's documents is listed in ``unparsable`` instead, so a judge can
    report it as an error rather than judge an empty or made-up context.
    """

    model_config = ConfigDict(extra="forbid")

    query: str | None = None
    documents: list[RetrievedDocument] = Field(default_factory=list)
    span_id: str | None = None
    unparsable: list[int] = Field(default_factory=list)
    unparsable_uris: list[str | None] = Field(
        default_factory=list, description="the address of each unparsable document, if any")


def span_type(span: Span) -> str | None:
    """The span's type in upper case: OpenInference's ``openinference.span.kind`` or MLflow's
    ``mlflow.spanType`` (which MLflow stores JSON-encoded, ``"\"RETRIEVER\""``)."""
    for key in ("openinference.span.kind", "mlflow.spanType"):
        value = span.attributes.get(key)
        if isinstance(value, str) and value.strip():
            text = value.strip()
            if text.startswith('"'):
                with contextlib.suppress(ValueError):
                    text = str(json.loads(text))
            return text.upper()
    return None


def is_retriever_span(span: Span) -> bool:
    return span_type(span) == "RETRIEVER"


def top_level_retrievers(spans: Iterable[Span]) -> list[Span]:
    """Retriever spans with no retriever among their ancestors, in trace order.

    A retriever that calls another retriever (a reranker over a search, a multi-query
    retriever) reports the documents that came out of the whole step once: the inner spans'
    documents would count twice. Parents are followed by ``span_id``; a loop is cut.
    """
    spans = list(spans)
    by_id = {s.span_id: s for s in spans if s.span_id}
    found = []
    for span in spans:
        if not is_retriever_span(span):
            continue
        parent_id, seen, nested = span.parent_id, {span.span_id}, False
        while parent_id and parent_id not in seen:
            seen.add(parent_id)
            parent = by_id.get(parent_id)
            if parent is None:
                break
            if is_retriever_span(parent):
                nested = True
                break
            parent_id = parent.parent_id
        if not nested:
            found.append(span)
    return found


def retrievals(execution: Execution | Iterable[Span], *,
               top_level: bool = False) -> list[Retrieval]:
    """Every retriever span's query and documents, in trace order (only the top-level
    retrievers with ``top_level``: see :func:`top_level_retrievers`)."""
    spans = list(execution.trace if isinstance(execution, Execution) else execution)
    chosen = top_level_retrievers(spans) if top_level else \
        [s for s in spans if is_retriever_span(s)]
    return [_retrieval(s) for s in chosen]


def _retrieval(span: Span) -> Retrieval:
    attributes = span.attributes
    query = attributes.get("input.value", attributes.get("mlflow.spanInputs"))
    raw = _raw_documents(span)
    documents: list[RetrievedDocument] = []
    unparsable: list[int] = []
    uris: list[str | None] = []
    for index, item in enumerate(raw):
        document = _document(item)
        if document is None:
            unparsable.append(index)
            uris.append(_uri_of(item))
        else:
            documents.append(document)
    return Retrieval(query=_query(query), documents=documents, span_id=span.span_id,
                     unparsable=unparsable, unparsable_uris=uris)


def _query(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        if isinstance(parsed, dict):
            for key in ("query", "input", "question"):
                if isinstance(parsed.get(key), str):
                    return str(parsed[key])
        if isinstance(parsed, str):
            return parsed
        return value
    if isinstance(value, Mapping):
        for key in ("query", "input", "question"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return _text(value)


def _raw_documents(span: Span) -> list[Any]:
    """The span's documents as given: flattened OpenInference attributes, an attribute list,
    or the span's output (``output.value`` or MLflow's ``mlflow.spanOutputs``): a list of
    documents, or an object with a ``documents`` list; JSON text is parsed first."""
    attributes = span.attributes
    flat: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        found = DOCUMENT_ATTRIBUTE.fullmatch(key)
        if found:
            flat.setdefault(int(found.group(1)), {})[found.group(2)] = value
    if flat:
        return [flat[i] for i in sorted(flat)]
    listed = attributes.get("retrieval.documents")
    if isinstance(listed, list):
        return [_strip_prefix(d) for d in listed]
    for key in ("output.value", "mlflow.spanOutputs"):
        output = attributes.get(key)
        if isinstance(output, str):
            try:
                output = json.loads(output)
            except ValueError:
                continue
        if isinstance(output, Mapping) and isinstance(output.get("documents"), list):
            return list(output["documents"])
        if isinstance(output, list):
            return output
    return []


def _strip_prefix(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return value
    return {str(k).removeprefix("document."): v for k, v in value.items()}


def _metadata(raw: Mapping[str, Any]) -> dict[str, Any]:
    metadata = raw.get("metadata")
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            metadata = {"metadata": metadata}
    return dict(metadata) if isinstance(metadata, Mapping) else {}


def _uri_of(raw: Any) -> str | None:
    if not isinstance(raw, Mapping):
        return None
    extra = {**_metadata(raw), **{k: v for k, v in raw.items() if k != "metadata"}}
    uri = next((extra[k] for k in URI_KEYS if extra.get(k) not in (None, "")), None)
    return str(uri) if uri is not None else None


def _document(raw: Any) -> RetrievedDocument | None:
    """One document: ``page_content``/``content``/``text`` is its text, the rest metadata
    (``doc_uri`` from ``doc_uri``, ``uri``, ``url`` or ``source``); plain text is a document
    of its own; anything without text is None."""
    if isinstance(raw, str):
        return RetrievedDocument(content=raw)
    if not isinstance(raw, Mapping):
        return None
    data = dict(raw)
    content = next((data.pop(k) for k in TEXT_KEYS if data.get(k) is not None), None)
    if content is None or isinstance(content, Mapping | list):
        return None
    extra = _metadata(data)
    data.pop("metadata", None)
    extra.update({k: v for k, v in data.items() if k not in TEXT_KEYS})
    uri = _uri_of(raw)
    return RetrievedDocument(content=_text(content) or "", doc_uri=uri, metadata=extra)


# -- retrieved context, as judges read it ------------------------------------------------


class Chunk(BaseModel):
    """One retrieved chunk as a judge sees it: its text, or why it has none."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    doc_uri: str | None = None
    span_id: str | None = None
    problem: str | None = Field(default=None, description="why the chunk has no text to "
                                "judge (a retriever span's document with no text field)")


class RetrievedContext(BaseModel):
    """The retrieved context of an execution: the chunks, where they came from, and whether
    any part could not be read.

    ``source`` is ``"data"`` (``retrieved_context`` given with the execution), ``"trace"``
    (top-level retriever spans) or None (nothing retrieved). ``problem`` is set when a
    retriever span returned documents with no text: judging the rest as if it were the
    whole context could turn a missing document into a "not supported", so whole-context
    judges report the error instead.
    """

    model_config = ConfigDict(extra="forbid")

    chunks: list[Chunk] = Field(default_factory=list)
    source: Literal["data", "trace"] | None = None
    problem: str | None = None

    @property
    def texts(self) -> list[str]:
        """The chunks' texts, empty ones left out."""
        return [c.content for c in self.chunks if c.content]

    @property
    def doc_uris(self) -> list[str]:
        """Every retrieved document's address, unreadable documents' included."""
        return [c.doc_uri for c in self.chunks if c.doc_uri]


UNPARSABLE = "unparsable_retrieval_context"


def retrieved_context(execution: Execution) -> RetrievedContext:
    """The context an execution retrieved: ``retrieved_context`` as given, else the documents
    of the trace's top-level retriever spans (see :func:`top_level_retrievers`).

    This is the one rule every retrieval judge and ``document_recall`` use.
    """
    if execution.retrieved_context:
        # The documents are validated already; a chunk is built per document per judge.
        return RetrievedContext(source="data", chunks=[
            Chunk.model_construct(content=d.content, doc_uri=d.doc_uri)
            for d in execution.retrieved_context])
    found = retrievals(execution, top_level=True)
    if not found:
        return RetrievedContext()
    chunks: list[Chunk] = []
    problems: list[str] = []
    for retrieval in found:
        documents = iter(retrieval.documents)
        bad = dict(zip(retrieval.unparsable, retrieval.unparsable_uris, strict=False))
        for index in range(len(retrieval.documents) + len(retrieval.unparsable)):
            if index in bad:
                message = (f"retriever span {retrieval.span_id or '?'} document {index} has no "
                           f"text (none of {', '.join(TEXT_KEYS)})")
                problems.append(message)
                chunks.append(Chunk(span_id=retrieval.span_id, problem=message,
                                    doc_uri=bad[index]))
            else:
                doc = next(documents)
                chunks.append(Chunk(content=doc.content, doc_uri=doc.doc_uri,
                                    span_id=retrieval.span_id))
    problem = None
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        problem = problems[0] + more
    return RetrievedContext(source="trace", chunks=chunks, problem=problem)


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

