"""Trace normalisation from the three shapes, tool calls, retrievals, name matching."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from assay.errors import EvaluationError
from assay.traces.retrieval import retrievals
from assay.traces.tools import (
    ToolCallRecord,
    matches_expected,
    matches_key,
    parse_args,
    parse_output,
    sanitize_tool_name,
    tool_calls,
    tool_calls_from_spans,
)
from assay.types.execution import Execution
from assay.types.spans import Span, from_dict, normalize_trace, otlp_id, to_seconds

otel_sdk = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, Status, StatusCode  # noqa: E402


def record_spans() -> list[Any]:
    """Real SDK spans: an agent span with a tool call, a synthesized tool and a retriever."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("agent", kind=SpanKind.SERVER) as agent:
        agent.set_attribute("openinference.span.kind", "AGENT")
        with tracer.start_as_current_span("search") as tool:
            tool.set_attribute("tool.name", "web search")
            tool.set_attribute("input.value", json.dumps({"q": "paris", "n": 3}))
            tool.set_attribute("output.value", json.dumps({"content": "Paris is in France"}))
            tool.set_attribute("tags", ["a", "b"])
            tool.add_event("cache miss", {"key": "paris"})
        with tracer.start_as_current_span("mock") as fake:
            fake.set_attribute("tool.name", "calculator")
            fake.set_attribute("tool.synthesized", True)
        with tracer.start_as_current_span("retrieve") as retriever:
            retriever.set_attribute("openinference.span.kind", "RETRIEVER")
            retriever.set_attribute("input.value", "capital of France")
            retriever.set_attribute("retrieval.documents.0.document.content", "Paris is ...")
            retriever.set_attribute("retrieval.documents.0.document.id", "doc-1")
            retriever.set_attribute("retrieval.documents.0.document.score", 0.9)
            retriever.set_attribute("retrieval.documents.1.document.content", "France is ...")
        agent.set_status(Status(StatusCode.ERROR, "boom"))
    spans = list(exporter.get_finished_spans())
    provider.shutdown()
    return spans


# -- (a) OpenTelemetry SDK -----------------------------------------------------------------


def test_readable_spans_are_normalised() -> None:
    raw = record_spans()
    spans = normalize_trace(raw)
    assert [s.name for s in spans] == ["search", "mock", "retrieve", "agent"]
    agent = spans[3]
    search = spans[0]
    assert agent.kind == "server" and search.kind == "internal"
    assert agent.status == "error" and agent.attributes["otel.status_description"] == "boom"
    assert search.parent_id == agent.span_id
    assert agent.parent_id is None
    assert search.span_id == format(raw[0].context.span_id, "016x")
    assert len(search.span_id) == 16
    assert search.start_time == raw[0].start_time / 1_000_000_000
    assert search.end_time is not None and search.start_time is not None
    assert 0 <= search.end_time - search.start_time < 60
    assert search.attributes["tags"] == ["a", "b"]
    assert search.events[0]["name"] == "cache miss"
    assert search.events[0]["attributes"] == {"key": "paris"}
    assert isinstance(search.events[0]["time"], float)


def test_execution_accepts_readable_spans_and_extracts_calls() -> None:
    execution = Execution(output="x", trace=record_spans())
    assert all(isinstance(s, Span) for s in execution.trace)
    calls = tool_calls(execution)
    assert [c.model_copy(update={'duration_ms': None}) for c in calls] == [ToolCallRecord(name="web search", args={"q": "paris", "n": 3},
                                    output="Paris is in France", id=None)]
    found = retrievals(execution)
    assert len(found) == 1 and found[0].query == "capital of France"
    docs = found[0].documents
    assert [d.content for d in docs] == ["Paris is ...", "France is ..."]
    assert docs[0].metadata == {"id": "doc-1", "score": 0.9}
    # the normalised execution survives a JSON round trip
    again = Execution.model_validate_json(execution.model_dump_json())
    assert again.trace == execution.trace


# -- (b) OTLP JSON -------------------------------------------------------------------------

SPAN_ID = bytes.fromhex("00f067aa0ba902b7")
PARENT_ID = bytes.fromhex("53995c3f42cd8ad8")


def otlp_export(ids: str = "hex") -> dict[str, Any]:
    def encode(raw: bytes) -> str:
        return raw.hex() if ids == "hex" else base64.b64encode(raw).decode()

    def attr(key: str, value: dict[str, Any]) -> dict[str, Any]:
        return {"key": key, "value": value}

    return {"resourceSpans": [{
        "resource": {"attributes": [attr("service.name", {"stringValue": "agent"})]},
        "scopeSpans": [{"scope": {"name": "x"}, "spans": [{
            "traceId": encode(bytes(range(16))),
            "spanId": encode(SPAN_ID),
            "parentSpanId": encode(PARENT_ID),
            "name": "lookup",
            "kind": 3,
            "startTimeUnixNano": "1700000000123456789",
            "endTimeUnixNano": "1700000001500000000",
            "status": {"code": 1},
            "attributes": [
                attr("tool.name", {"stringValue": "Lookup Order!"}),
                attr("tool.id", {"stringValue": "orders-v2"}),
                attr("input.value", {"stringValue": "{'order': 42}"}),
                attr("output.value", {"stringValue": "shipped"}),
                attr("retries", {"intValue": "3"}),
                attr("ratio", {"doubleValue": 0.25}),
                attr("cached", {"boolValue": False}),
                attr("tags", {"arrayValue": {"values": [{"stringValue": "a"},
                                                        {"intValue": "2"}]}}),
                attr("extra", {"kvlistValue": {"values": [
                    attr("k", {"stringValue": "v"}),
                    attr("n", {"arrayValue": {"values": []}})]}}),
                attr("empty", {}),
            ],
            "events": [{"timeUnixNano": "1700000000500000000", "name": "log",
                        "attributes": [attr("msg", {"stringValue": "hi"})]}],
        }]}],
    }]}


@pytest.mark.parametrize("ids", ["hex", "base64"])
def test_otlp_json_is_normalised(ids: str) -> None:
    (span,) = normalize_trace(otlp_export(ids))
    assert span.name == "lookup" and span.kind == "client" and span.status == "ok"
    assert span.span_id == "00f067aa0ba902b7" and span.parent_id == "53995c3f42cd8ad8"
    assert span.start_time == pytest.approx(1700000000.123456789)
    assert span.end_time == 1700000001.5
    assert span.attributes["retries"] == 3 and span.attributes["ratio"] == 0.25
    assert span.attributes["cached"] is False
    assert span.attributes["tags"] == ["a", 2]
    assert span.attributes["extra"] == {"k": "v", "n": []}
    assert span.attributes["empty"] is None
    assert "service.name" not in span.attributes
    assert span.events == [{"name": "log", "time": 1700000000.5, "attributes": {"msg": "hi"}}]


def test_otlp_text_kinds_statuses_and_jsonl() -> None:
    export = otlp_export()
    raw = export["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    raw["kind"] = "SPAN_KIND_PRODUCER"
    raw["status"] = {"code": "STATUS_CODE_ERROR", "message": "late"}
    line = json.dumps(export)
    spans = normalize_trace(line + "\n" + line + "\n")
    assert len(spans) == 2
    assert spans[0].kind == "producer" and spans[0].status == "error"
    assert spans[0].attributes["otel.status_description"] == "late"


def test_otlp_tool_call_uses_literal_eval_and_id() -> None:
    execution = Execution(trace=otlp_export())
    (call,) = tool_calls(execution)
    assert call.model_copy(update={'duration_ms': None}) == ToolCallRecord(name="Lookup Order!", args={"order": 42}, output="shipped",
                                  id="orders-v2")


def test_otlp_ids() -> None:
    assert otlp_id("00F067AA0BA902B7") == "00f067aa0ba902b7"
    assert otlp_id("0xABC") == "abc" and otlp_id(255) == "00000000000000ff"
    assert otlp_id("abcd") == "abcd" and otlp_id("1") == "1"      # short ids stay as they are
    assert otlp_id(base64.b64encode(SPAN_ID).decode()) == "00f067aa0ba902b7"
    assert otlp_id("") is None and otlp_id(None) is None
    assert otlp_id("not*base64") == "not*base64"


# -- (c) plain dicts -----------------------------------------------------------------------


def test_plain_dicts_in_span_field_names() -> None:
    execution = Execution(trace=[
        {"name": "plan", "span_id": "1", "start_time": 10.0, "end_time": 10.5},
        {"name": "call", "span_id": "2", "parent_id": "1", "status": "ok",
         "attributes": {"tool.name": "search", "input.value": {"q": "x"},
                        "output.value": {"content": [1, 2]}}},
    ])
    assert execution.trace[0].start_time == 10.0
    assert execution.trace[1].parent_id == "1" and execution.trace[1].status == "ok"
    (call,) = tool_calls(execution)
    assert call.args == {"q": "x"} and call.output == "[1, 2]"


def test_plain_dicts_in_sdk_to_json_shape() -> None:
    (raw,) = record_spans()[:1]
    span = from_dict(json.loads(raw.to_json()))
    assert span.name == "search" and span.kind == "internal" and span.status == "unset"
    assert span.span_id == format(raw.context.span_id, "016x")
    assert span.parent_id == format(raw.parent.span_id, "016x")
    assert span.start_time == pytest.approx(raw.start_time / 1e9, abs=1e-6)
    assert span.events[0]["name"] == "cache miss" and isinstance(span.events[0]["time"], float)


def test_plain_dicts_with_otlp_names_and_units() -> None:
    (span,) = normalize_trace({"spans": [{
        "name": "s", "spanId": 255, "parentSpanId": "0xABC",
        "startTimeUnixNano": 1_700_000_000_000_000_000, "end_time": 1_700_000_002_000,
        "attributes": [{"key": "a", "value": {"intValue": "1"}}]}]})
    assert span.span_id == "00000000000000ff" and span.parent_id == "abc"
    assert span.start_time == 1_700_000_000.0 and span.end_time == 1_700_000_002.0
    assert span.attributes == {"a": 1}


def test_times_in_any_unit() -> None:
    assert to_seconds(1.5) == 1.5
    assert to_seconds(1_700_000_000) == 1_700_000_000.0
    assert to_seconds(1_700_000_000_250) == 1_700_000_000.25
    assert to_seconds(1_700_000_000_250_000) == 1_700_000_000.25
    assert to_seconds("1700000000250000000") == 1_700_000_000.25
    assert to_seconds("1970-01-01T00:00:02Z") == 2.0
    assert to_seconds(None) is None
    with pytest.raises(EvaluationError):
        to_seconds("yesterday")


def test_unknown_span_fields_and_objects_are_reported() -> None:
    with pytest.raises(ValidationError, match="trace"):
        Execution(trace=[{"name": "x", "colour": "red"}])
    with pytest.raises(EvaluationError) as info:
        normalize_trace([42])
    assert info.value.code == "invalid_trace" and "trace[0]" in info.value.message
    assert normalize_trace(None) == [] and Execution().trace == []


def test_span_instances_pass_through() -> None:
    span = Span(name="x")
    assert normalize_trace([span])[0] is span


# -- tool-call parsing rules ---------------------------------------------------------------


def test_parse_args_rules() -> None:
    assert parse_args('{"a": 1}') == {"a": 1}
    assert parse_args("{'a': (1, 2)}") == {"a": (1, 2)}
    assert parse_args("[1, 2]") == {}
    assert parse_args("not python") == {}
    assert parse_args(None) == {}


def test_parse_output_rules() -> None:
    assert parse_output('{"content": "done"}') == "done"
    assert parse_output('{"status": "done"}') == '{"status": "done"}'
    assert parse_output("[1, 2]") == "[1, 2]"
    assert parse_output("plain text") == "plain text"
    assert parse_output({"content": "x"}) == "x"
    assert parse_output({"other": 1}) == '{"other": 1}'
    assert parse_output(None) is None


def test_synthesized_and_nameless_spans_are_not_tool_calls() -> None:
    execution = Execution(trace=[
        {"name": "a", "attributes": {"tool.name": "x", "tool.synthesized": "true"}},
        {"name": "b", "attributes": {"tool.name": ""}},
        {"name": "c", "attributes": {"tool.name": "y", "tool.synthesized": False}},
    ])
    assert [c.name for c in tool_calls(execution)] == ["y"]


def test_messages_are_used_when_there_are_no_tool_spans() -> None:
    messages = [
        {"role": "user", "content": "weather in Paris and Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
            {"id": "call_2", "function": {"name": "weather", "arguments": "oops"}}]},
        {"role": "tool", "tool_call_id": "call_2", "content": "rain"},
        {"role": "tool", "tool_call_id": "call_1", "content": "sun"},
        {"role": "assistant", "content": "Sun in Paris, rain in Rome."},
    ]
    execution = Execution(messages=messages, trace=[{"name": "llm"}])
    assert tool_calls(execution) == [
        ToolCallRecord(name="weather", args={"city": "Paris"}, output="sun"),
        ToolCallRecord(name="weather", args={}, output="rain"),
    ]
    traced = Execution(messages=messages, trace=[{"name": "t", "attributes": {"tool.name": "z"}}])
    assert [c.name for c in tool_calls(traced)] == ["z"]


# -- names and matching --------------------------------------------------------------------


def test_sanitize_tool_name() -> None:
    assert sanitize_tool_name("Lookup Order!") == "Lookup_Order"
    assert sanitize_tool_name("  web \t search ") == "web_search"
    assert sanitize_tool_name("a.b/c-d_e") == "abc-d_e"
    assert sanitize_tool_name("x" * 70) == "x" * 64


def test_id_vs_name_matching() -> None:
    named = ToolCallRecord(name="Web Search")
    with_id = ToolCallRecord(name="Web Search", id="tool-7")
    assert matches_key(named, "Web_Search") and matches_key(named, "Web Search")
    assert not matches_key(named, "web_search")
    assert matches_key(with_id, "tool-7") and not matches_key(with_id, "Web Search")
    assert matches_expected(named, "Web Search", "tool-7")     # no actual id: by name
    assert matches_expected(with_id, "anything", "tool-7")
    assert not matches_expected(with_id, "Web Search", None)   # never an id against a name


# -- retrievals ----------------------------------------------------------------------------


def test_retrieval_documents_from_output_json() -> None:
    execution = Execution(trace=[{"name": "r", "attributes": {
        "openinference.span.kind": "RETRIEVER",
        "input.value": json.dumps({"query": "capital"}),
        "output.value": json.dumps({"documents": [
            {"page_content": "Paris", "metadata": {"source": "wiki/paris"}},
            {"b": 2, "a": 1},
            "plain text"]}),
    }}, {"name": "other", "attributes": {"openinference.span.kind": "LLM"}}])
    (found,) = retrievals(execution)
    assert found.query == "capital"
    # a document with no text field is not turned into text: it is listed as unparsable
    assert [d.content for d in found.documents] == ["Paris", "plain text"]
    assert found.unparsable == [1]
    assert found.documents[0].doc_uri == "wiki/paris"


def test_retrieval_documents_as_attribute_list() -> None:
    spans = normalize_trace([{"name": "r", "attributes": {
        "openinference.span.kind": "retriever",
        "retrieval.documents": [{"document.content": "A", "document.id": "1"}]}}])
    (found,) = retrievals(spans)
    assert found.query is None
    assert found.documents[0].content == "A" and found.documents[0].metadata == {"id": "1"}


# -- retrieved context for judges: top-level retrievers, MLflow's trace JSON ----------------


def test_mlflow3_span_dicts_and_top_level_retrievers() -> None:
    """MLflow 3's ``Span.to_dict()`` shape: base64 ids, nanosecond times, a status object,
    JSON-encoded attribute values; a retriever inside a retriever is not top-level."""
    import base64

    from assay.traces.retrieval import retrieved_context, top_level_retrievers

    def b64(hex_id: str) -> str:
        return base64.b64encode(bytes.fromhex(hex_id)).decode()

    def span(hex_id: str, name: str, kind: str, parent: str | None, docs: object = None,
             ) -> dict[str, object]:
        attributes = {"mlflow.spanType": json.dumps(kind)}
        if docs is not None:
            attributes["mlflow.spanOutputs"] = json.dumps(docs)
        return {"trace_id": b64("0" * 32), "span_id": b64(hex_id), "trace_state": "",
                "parent_span_id": b64(parent) if parent else None, "name": name,
                "start_time_unix_nano": 1700000000000000000,
                "end_time_unix_nano": 1700000001000000000, "attributes": attributes,
                "status": {"message": "", "code": "STATUS_CODE_OK"}, "events": []}

    trace = {"info": {"trace_id": "tr-1"}, "data": {"spans": [
        span("00000000000000b0", "agent", "AGENT", None),
        span("00000000000000b1", "rerank", "RETRIEVER", "00000000000000b0",
             [{"page_content": "kept", "metadata": {"doc_uri": "k"}}]),
        span("00000000000000b2", "search", "RETRIEVER", "00000000000000b1",
             [{"page_content": "inner", "metadata": {"doc_uri": "i"}}]),
        span("00000000000000b3", "other", "RETRIEVER", "00000000000000b0",
             [{"text": "also kept", "metadata": {"doc_uri": "a"}}, {"score": 1.0}]),
    ]}}
    execution = Execution(output="x", trace=trace)
    assert [s.name for s in top_level_retrievers(execution.trace)] == ["rerank", "other"]
    context = retrieved_context(execution)
    assert context.source == "trace"
    assert [c.content for c in context.chunks] == ["kept", "also kept", None]
    assert context.doc_uris == ["k", "a"]
    assert context.problem is not None and "has no text" in context.problem
    # given context wins over the trace
    given = Execution(output="x", trace=trace, retrieved_context=[{"content": "given"}])
    assert [c.content for c in retrieved_context(given).chunks] == ["given"]


def test_span_type_and_outputs_shorthand_in_span_dicts() -> None:
    from assay.traces.retrieval import retrieved_context

    spans = normalize_trace([{"name": "r", "span_id": "1", "span_type": "RETRIEVER",
                              "outputs": [{"content": "c", "metadata": {"doc_uri": "u"}}],
                              "status_code": "OK", "status_message": ""}])
    assert spans[0].status == "ok"
    context = retrieved_context(Execution(trace=spans))
    assert [(c.content, c.doc_uri) for c in context.chunks] == [("c", "u")]


def test_spans_typed_tool_are_tool_calls() -> None:
    """MLflow marks a tool span by its type, JSON-encoded as every MLflow attribute, and keeps
    its arguments and result in spanInputs and spanOutputs; OpenInference by its span kind.
    Either is named by the span's name when it has no ``tool.name``."""
    spans = normalize_trace({"info": {}, "data": {"spans": [
        {"name": "agent", "span_id": "a", "attributes": {"mlflow.spanType": '"AGENT"'}},
        {"name": "lookup", "span_id": "b", "parent_span_id": "a",
         "start_time_unix_nano": 1_790_000_000_000_000_000,
         "end_time_unix_nano": 1_790_000_000_500_000_000,
         "attributes": {"mlflow.spanType": '"TOOL"', "mlflow.spanInputs": '{"city": "Paris"}',
                        "mlflow.spanOutputs": '"sunny"'}},
        {"name": "not a tool", "span_id": "c", "attributes": {"mlflow.spanType": '"LLM"'}},
        {"name": "search", "span_id": "d", "start_time_unix_nano": 1_790_000_001_000_000_000,
         "attributes": {"openinference.span.kind": "TOOL", "input.value": '{"q": "x"}',
                        "output.value": "found"}},
        {"name": "made up", "span_id": "e", "attributes": {
            "mlflow.spanType": '"TOOL"', "tool.synthesized": True}},
    ]}})
    lookup, search = tool_calls_from_spans(spans)
    assert (lookup.name, lookup.args, lookup.output, lookup.duration_ms) == (
        "lookup", {"city": "Paris"}, "sunny", 500.0)
    assert (search.name, search.args, search.output) == ("search", {"q": "x"}, "found")


def test_an_otlp_file_with_values_not_of_their_type_reads_each_bad_span_as_a_note(tmp_path):
    """A file export's typed values were read unchecked: a pair that is not an object, an
    intValue that is not a number and a token count of infinity ended the read in a
    TypeError, a ValueError and an OverflowError."""
    from assay.run.sources.base import TraceQuery
    from assay.run.sources.files import FileSource
    from assay.run.sources.suite import read_traces

    def otlp_span(name: str, attributes: list[Any]) -> dict[str, Any]:
        return {"traceId": "ab" * 16, "spanId": f"{len(name):016x}", "name": name,
                "startTimeUnixNano": "1700000000000000000",
                "endTimeUnixNano": "1700000001000000000", "attributes": attributes}

    spans = [otlp_span("agent", [
                 {"key": "input.value", "value": {"stringValue": "q"}},
                 {"key": "output.value", "value": {"stringValue": "a"}},
                 {"key": "llm.token_count.prompt", "value": {"doubleValue": "Infinity"}},
                 {"key": "llm.token_count.completion", "value": {"intValue": "5"}}]),
             otlp_span("pair", [7]),
             otlp_span("a number", [{"key": "n", "value": {"intValue": "many"}}])]
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    (case,) = read_traces(FileSource(path, "otlp"), TraceQuery())
    reading = case.reading
    assert reading.execution.output == "a"
    assert reading.execution.usage is not None
    assert reading.execution.usage.completion_tokens == 5
    notes = "\n".join(reading.notes)
    assert "span 'pair' attributes[0]: expected an object with a text \"key\" and a typed " \
        "\"value\", not int 7" in notes
    assert "span 'a number' attributes['n'].intValue: expected a 64-bit integer, not 'many'" \
        in notes
    assert "1 token count(s) are not counts and were not counted, first span 'agent' " \
        "llm.token_count.prompt 'Infinity'" in notes


def test_a_trace_file_that_is_a_device_or_too_large_is_refused_not_read_for_ever(
        tmp_path, monkeypatch):
    """``otlp:/dev/zero`` was read until memory ran out: a trace file is read only when it
    is a regular file, and at most :data:`MAX_FILE_BYTES` of it."""
    from assay.run.sources import files
    from assay.run.sources.base import SourceError, TraceQuery
    from assay.run.sources.files import FileSource

    with pytest.raises(SourceError, match="not a regular file"):
        list(FileSource(Path("/dev/zero"), "otlp").traces(TraceQuery()))
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"resourceSpans": []}) + " " * 64)
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 32)
    with pytest.raises(SourceError, match="larger than") as refused:
        list(FileSource(path, "otlp").traces(TraceQuery()))
    assert str(path) in str(refused.value)
