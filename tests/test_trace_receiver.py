"""The OTLP/HTTP receiver of ``assay serve``: real exporters, real stores, hostile bodies."""

from __future__ import annotations

import concurrent.futures
import gzip
import json
import secrets
import zlib
from typing import Any

import httpx
import orjson
import pytest
import requests

from assay.run.sources.base import TraceQuery
from assay.run.sources.received import StoreSource
from assay.run.sources.suite import read_traces
from assay.store.runs import RunStore
from assay.store.traces import list_traces, trace_spans
from tests.server_support import TLS, serve
from tests.trace_support import agent_trace, export, span

TOKEN = "a-test-token-long-enough-to-be-a-secret"


def _post(base: str, body: bytes, *, content_type: str = "application/json",
          token: str | None = None, **headers: str) -> httpx.Response:
    sent = {"content-type": content_type, **headers}
    if token:
        sent["authorization"] = f"Bearer {token}"
    return httpx.post(base + "/v1/traces", content=body, headers=sent, timeout=60, verify=TLS)


def _status(answer: httpx.Response | requests.Response) -> Any:
    """The ``google.rpc.Status`` an error answer to a protobuf request is, said as such."""
    from google.rpc.status_pb2 import Status

    assert answer.headers["content-type"] == "application/x-protobuf", answer.headers
    return Status.FromString(answer.content)


def _reason(status: Any) -> tuple[str, str]:
    """The assay error code and domain a Status carries in its ``ErrorInfo``."""
    from google.rpc.error_details_pb2 import ErrorInfo

    info = ErrorInfo()
    assert status.details[0].Unpack(info)
    return info.reason, info.domain


def _readings(url: str) -> dict[str, object]:
    return {c.trace.trace_id: c for c in read_traces(StoreSource(url), TraceQuery())}


def test_an_otlp_json_export_is_stored_by_trace_and_read_as_an_execution(store_url):
    first, spans_a = agent_trace("What is the capital of France?", "Paris")
    second, spans_b = agent_trace("And of Italy?", "Rome", start=1_790_000_100.0)
    with serve(store_url) as served:
        # the two traces' spans interleaved over two requests, one of them sent twice
        response = _post(served.url, orjson.dumps(export(*spans_a[:2], spans_b[0])))
        assert response.status_code == 200, response.text
        assert response.json() == {}
        for _ in range(2):  # an exporter retrying: nothing is stored twice
            assert _post(served.url, orjson.dumps(export(spans_a[2], *spans_b[1:]))
                         ).status_code == 200
    store = RunStore(store_url)
    rows = {t.trace_id: t for t in list_traces(store)}
    assert set(rows) == {first, second}
    assert rows[first].service == "agent" and rows[first].root_name == "agent"
    assert len(trace_spans(store, first)[0]) == 3
    cases = _readings(store_url)
    reading = cases[first].reading  # type: ignore[attr-defined]
    execution = reading.execution
    assert execution.input == "What is the capital of France?"
    assert execution.output == "Paris"
    assert execution.latency_ms == pytest.approx(2000, abs=1)
    assert execution.usage is not None and execution.usage.prompt_tokens == 12
    from assay.traces.tools import tool_calls

    assert [c.name for c in tool_calls(execution)] == ["lookup"]
    assert reading.notes == []


def test_the_stock_exporter_sends_gzip_protobuf_and_the_token_is_required(tmp_path):
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    url = f"sqlite:///{tmp_path}/runs.db"
    with serve(url, token=TOKEN) as served:
        kept = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(kept))
        tracer = provider.get_tracer("test")
        exporter = OTLPSpanExporter(endpoint=served.url + "/v1/traces",
                                    headers={"Authorization": f"Bearer {TOKEN}"},
                                    compression=Compression.Gzip)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        with tracer.start_as_current_span("agent") as root:
            root.set_attribute("input.value", "2+2?")
            with tracer.start_as_current_span("calculator") as tool:
                tool.set_attribute("tool.name", "calculator")
            root.set_attribute("output.value", "4")
        provider.shutdown()
        refused = OTLPSpanExporter(endpoint=served.url + "/v1/traces")  # no token
        assert refused.export(kept.get_finished_spans()) is SpanExportResult.FAILURE
    (case,) = _readings(url).values()
    assert case.reading.execution.output == "4"  # type: ignore[attr-defined]
    assert {s.name for s in case.reading.execution.trace} == {  # type: ignore[attr-defined]
        "agent", "calculator"}


def test_bad_bodies_are_clear_errors_and_the_receiver_keeps_answering(tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    good_id, good = agent_trace("q", "a")
    with serve(url) as served:
        def post_bad(body: bytes) -> httpx.Response:
            return _post(served.url, body, content_type="application/x-protobuf")

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            bad = [pool.submit(post_bad, secrets.token_bytes(4096)) for _ in range(6)]
            ok = pool.submit(_post, served.url, orjson.dumps(export(*good)))
            answers = [f.result() for f in bad]
            assert ok.result().status_code == 200
        for answer in answers:
            assert answer.status_code == 400
            status = _status(answer)
            assert _reason(status) == ("INVALID_OTLP", "assay")
            assert "ExportTraceServiceRequest" in status.message
        not_json = _post(served.url, b"{not json")
        assert not_json.status_code == 400 and "not JSON" in not_json.json()["detail"]
        wrong = _post(served.url, b'{"resourceSpans": 3}')
        assert wrong.status_code == 400 and "resourceSpans" in wrong.json()["detail"]
        xml = _post(served.url, b"<x/>", content_type="text/xml")
        assert xml.status_code == 415 and "x-protobuf" in xml.json()["detail"]
        cut = _post(served.url, gzip.compress(orjson.dumps(export(*good)))[:40],
                    **{"content-encoding": "gzip"})
        assert cut.status_code == 400 and "cut short" in cut.json()["detail"]
        assert httpx.get(served.url + "/health").status_code == 200
    assert [t.trace_id for t in list_traces(RunStore(url))] == [good_id]


def test_a_span_without_a_trace_id_is_rejected_alone(tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    trace_id, spans = agent_trace("q", "a")
    orphan = span(None, "orphan")
    no_span_id = span(trace_id, "nameless")
    no_span_id["spanId"] = ""
    with serve(url) as served:
        response = _post(served.url, orjson.dumps(export(*spans, orphan, no_span_id)))
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "2"
    assert "no trace id" in partial["errorMessage"]
    assert "no span id" in partial["errorMessage"]
    assert len(trace_spans(RunStore(url), trace_id)[0]) == 3


def test_a_10_mb_attribute_is_cut_and_said_and_a_body_over_the_limit_is_413(tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    _, spans = agent_trace("q" * 10_000_000, "a")
    body = orjson.dumps(export(*spans))
    with serve(url) as served:
        assert _post(served.url, body).status_code == 200
    (case,) = _readings(url).values()
    reading = case.reading  # type: ignore[attr-defined]
    assert len(reading.execution.input) == 1_000_000
    assert any("input.value (cut from 10000000 characters)" in n for n in reading.notes)
    with serve(url, max_trace_bytes=1_000_000) as served:
        too_big = _post(served.url, body)
        assert too_big.status_code == 413
        assert "1000000" in too_big.json()["detail"]
        bomb = gzip.compress(b" " * 5_000_000 + body[:100])  # small compressed, huge inflated
        inflated = _post(served.url, bomb, **{"content-encoding": "gzip"})
        assert inflated.status_code == 413
        assert "decompresses" in inflated.json()["detail"]


def test_a_span_that_ends_before_it_starts_is_kept_and_said(tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    trace_id = secrets.token_hex(16)
    skewed = span(trace_id, "agent", start=1_790_000_010.0, end=1_790_000_000.0,
                  **{"input.value": "q", "output.value": "a"})
    with serve(url) as served:
        assert _post(served.url, orjson.dumps(export(skewed))).status_code == 200
    (case,) = _readings(url).values()
    reading = case.reading  # type: ignore[attr-defined]
    assert reading.execution.latency_ms is None
    assert any("end before they start (clock skew)" in n for n in reading.notes)


def test_without_the_token_nothing_is_stored(tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    _, spans = agent_trace("q", "a")
    with serve(url, token=TOKEN) as served:
        refused = _post(served.url, orjson.dumps(export(*spans)))
        assert refused.status_code == 401
        assert _post(served.url, orjson.dumps(export(*spans)), token=TOKEN).status_code == 200
    assert len(list_traces(RunStore(url))) == 1


def test_a_huge_text_in_an_array_an_event_or_a_name_is_cut_and_said_too(tmp_path):
    """Only a top-level text attribute was cut: the same 3 MB sent as an array's item, a
    key-value list's value, an event's attribute or the span's name was stored whole."""
    url = f"sqlite:///{tmp_path}/runs.db"
    huge = "q" * 3_000_000
    trace_id, spans = agent_trace("question", "a")
    root = spans[0]
    root["name"] = huge
    root["attributes"] += [
        {"key": "tags", "value": {"arrayValue": {"values": [{"stringValue": "ok"},
                                                            {"stringValue": huge}]}}},
        {"key": "doc", "value": {"kvlistValue": {"values": [
            {"key": "body", "value": {"stringValue": huge}}]}}}]
    root["events"] = [{"name": "prompt", "timeUnixNano": root["startTimeUnixNano"],
                       "attributes": [{"key": "payload", "value": {"stringValue": huge}}]}]
    with serve(url) as served:
        assert _post(served.url, orjson.dumps(export(*spans))).status_code == 200
    (stored,) = [s for s in trace_spans(RunStore(url), trace_id)[0]
                 if s.span_id == root["spanId"]]
    assert len(stored.name) == 1_000_000
    assert stored.attributes["tags"] == ["ok", "q" * 1_000_000]
    assert len(stored.attributes["doc"]["body"]) == 1_000_000
    assert len(stored.events[0]["attributes"]["payload"]) == 1_000_000
    assert stored.attributes["assay.cut_attributes"] == [
        f"{where} (cut from 3000000 characters)"
        for where in ("tags[1]", "doc.body", "events[0].payload", "the span's name")]
    (case,) = _readings(url).values()
    assert any("4 attribute value(s) were cut" in n for n in case.reading.notes)  # type: ignore[attr-defined]


def _with(base: dict[str, object], **fields: object) -> dict[str, object]:
    return {**base, **fields}


def _typed(key: str, value: object) -> list[dict[str, object]]:
    return [{"key": "input.value", "value": {"stringValue": "q"}}, {"key": key, "value": value}]


def test_malformed_values_and_times_reject_their_span_alone_naming_the_field(
        tmp_path, capfd):
    """Each span here is wrong in one field: it is rejected alone with the field and what was
    expected (the receiver answered 500 for most), and the batch's good trace is stored."""
    url = f"sqlite:///{tmp_path}/runs.db"
    good_id, good = agent_trace("q", "a")
    base = span(secrets.token_hex(16), "bad")
    bad = [
        _with(base, attributes=_typed("n", {"intValue": "abc"})),
        _with(base, attributes=_typed("n", {"intValue": "9" * 5000})),
        _with(base, attributes=[5]),
        _with(base, attributes=[{"value": {"stringValue": "no key"}}]),
        _with(base, attributes=_typed("a", {"arrayValue": {"values": 5}})),
        _with(base, attributes=_typed("k", {"kvlistValue": {"values": [5]}})),
        _with(base, attributes=_typed("d", {"doubleValue": "abc"})),
        _with(base, events=[{"name": "e", "attributes": [7]}]),
        _with(base, startTimeUnixNano="1.0e400"),
        _with(base, startTimeUnixNano="-5000000000"),
    ]
    with serve(url) as served:
        response = _post(served.url, orjson.dumps(export(*good, *bad)))
        assert response.status_code == 200, response.text
        partial = response.json()["partialSuccess"]
        assert partial["rejectedSpans"] == str(len(bad))
        message = partial["errorMessage"]
        for said in ("attributes['n'].intValue: expected a 64-bit integer, not 'abc'",
                     "not text of 5000 characters",
                     "attributes[0]: expected an object with a text \"key\"",
                     "(and 5 more)"):
            assert said in message, message
        one_by_one = [_post(served.url, orjson.dumps(export(s))).json()["partialSuccess"]
                      ["errorMessage"] for s in bad[4:]]
        assert "arrayValue: expected {\"values\": [...]}" in one_by_one[0]
        assert "kvlistValue[0]: expected an object with a text \"key\"" in one_by_one[1]
        assert "doubleValue: expected a number, not 'abc'" in one_by_one[2]
        assert "events[0] attributes[0]: expected an object" in one_by_one[3]
        assert "start_time: span time '1.0e400' is not a finite number" in one_by_one[4]
        assert "startTimeUnixNano is -5e+09 s since 1970: expected a time OTLP can say" \
            in one_by_one[5]
        # a resource or scope list of the wrong shape refuses the request, naming it
        resource = _post(served.url, orjson.dumps(
            {"resourceSpans": [{"resource": 5, "scopeSpans": []}]}))
        assert resource.status_code == 400
        assert "resourceSpans[0].resource is not an object" in resource.json()["detail"]
        scopes = _post(served.url, orjson.dumps({"resourceSpans": [{"scopeSpans": 5}]}))
        assert scopes.status_code == 400
        assert "resourceSpans[0].scopeSpans is not a list" in scopes.json()["detail"]
    assert "Traceback" not in capfd.readouterr().err
    assert [t.trace_id for t in list_traces(RunStore(url))] == [good_id]


def test_a_json_body_naming_a_key_twice_is_refused_naming_the_key(tmp_path):
    """A span naming its traceId twice says two things: the body is refused (400, naming the
    key and where), nothing of it stored, and the receiver keeps answering."""
    url = f"sqlite:///{tmp_path}/runs.db"
    good_id, good = agent_trace("q", "a")
    body = orjson.dumps(export(*good))
    twice = body.replace(b'"traceId":', b'"traceId":"' + b"f" * 32 + b'","traceId":', 1)
    with serve(url) as served:
        refused = _post(served.url, twice)
        assert refused.status_code == 400, refused.text
        assert refused.json()["code"] == "invalid_otlp"
        assert "the body names a key twice: duplicate key 'traceId' at column" \
            in refused.json()["detail"]
        assert _post(served.url, body).status_code == 200
    assert [t.trace_id for t in list_traces(RunStore(url))] == [good_id]


def test_ids_that_are_not_otlp_ids_are_rejected_and_never_become_case_ids(tmp_path):
    """A trace id is a case id once judged: one that is a path, holds a NUL, a newline or an
    escape, or is not 16 bytes of hex, is rejected naming the field (it was stored)."""
    url = f"sqlite:///{tmp_path}/runs.db"
    good_id, good = agent_trace("q", "a")
    hostile = ["../../etc/passwd", "a\x00b\n\x1b[31m", "abc", "0x" + "f" * 40, 12345]
    bad = [span(h, "agent", **{"input.value": "q", "output.value": "a"})  # type: ignore[arg-type]
           for h in hostile]
    bad.append(span(secrets.token_hex(16), "agent", span_id="zz" * 8))
    bad.append(span(secrets.token_hex(16), "agent", parent="../x"))
    with serve(url) as served:
        response = _post(served.url, orjson.dumps(export(*good, *bad)))
        assert response.status_code == 200, response.text
        partial = response.json()["partialSuccess"]
        assert partial["rejectedSpans"] == str(len(bad))
        assert "traceId '../../etc/passwd' is not an id: expected 32 hex digits (16 bytes)" \
            in partial["errorMessage"]
        assert "traceId 'a\\x00b\\n\\x1b[31m' is not an id" in partial["errorMessage"]
        last = [_post(served.url, orjson.dumps(export(s))).json()["partialSuccess"]
                ["errorMessage"] for s in bad[-2:]]
        assert "spanId 'zzzzzzzzzzzzzzzz' is not an id: expected 16 hex digits" in last[0]
        assert "parentSpanId '../x' is not an id" in last[1]
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        request = ExportTraceServiceRequest()
        short = request.resource_spans.add().scope_spans.add().spans.add()
        short.trace_id, short.span_id, short.name = b"\x01\x02\x03", b"\x01" * 8, "short"
        answer = _post(served.url, request.SerializeToString(),
                       content_type="application/x-protobuf")
        partial = ExportTraceServiceResponse.FromString(answer.content).partial_success
        assert partial.rejected_spans == 1
        assert "traceId '010203' is not an id" in partial.error_message
    assert [t.trace_id for t in list_traces(RunStore(url))] == [good_id]


def test_a_span_nested_too_deep_is_rejected_alone_and_the_batch_is_stored(tmp_path):
    """Values nested 300 deep, plain or typed, refused the whole batch when it was stored
    (its good spans lost with it): now that span alone is rejected."""
    url = f"sqlite:///{tmp_path}/runs.db"
    good_id, good = agent_trace("q", "a")
    deep: object = "x"
    for _ in range(300):
        deep = {"a": deep}
    plain = _with(span(secrets.token_hex(16), "plain"), attributes={"deep": deep})
    typed: object = {"stringValue": "x"}
    for _ in range(300):
        typed = {"arrayValue": {"values": [typed]}}
    nested = _with(span(secrets.token_hex(16), "typed"),
                   attributes=[{"key": "d", "value": typed}])
    body = json.dumps(export(*good, plain, nested)).encode()  # deeper than orjson writes
    with serve(url) as served:
        response = _post(served.url, body)
    assert response.status_code == 200, response.text
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "2"
    assert "span 'plain': its attribute values: values nest more than 100 deep" in \
        partial["errorMessage"]
    assert "values nest more than 100 deep" in partial["errorMessage"].split(";")[1]
    assert [t.trace_id for t in list_traces(RunStore(url))] == [good_id]


def test_not_finite_doubles_are_kept_as_text_and_a_count_that_is_not_one_is_said(tmp_path):
    """NaN and infinity were stored as null (a value lost unsaid), from protobuf too; a token
    count of infinity is not counted and the case says so."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    url = f"sqlite:///{tmp_path}/runs.db"
    trace_id = secrets.token_hex(16)
    root = _with(span(trace_id, "agent"), attributes=[
        {"key": "input.value", "value": {"stringValue": "q"}},
        {"key": "output.value", "value": {"stringValue": "a"}},
        {"key": "quality", "value": {"doubleValue": "NaN"}},
        {"key": "llm.token_count.prompt", "value": {"doubleValue": "Infinity"}}])
    with serve(url) as served:
        assert _post(served.url, orjson.dumps(export(root))).status_code == 200
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(
            OTLPSpanExporter(endpoint=served.url + "/v1/traces")))
        with provider.get_tracer("test").start_as_current_span("sdk") as sdk:
            sdk.set_attribute("ratio", float("-inf"))
            sdk_trace = format(sdk.get_span_context().trace_id, "032x")
        provider.shutdown()
    store = RunStore(url)
    (stored,), _, _ = trace_spans(store, trace_id)
    assert stored.attributes["quality"] == "NaN"
    assert stored.attributes["llm.token_count.prompt"] == "Infinity"
    assert trace_spans(store, sdk_trace)[0][0].attributes["ratio"] == "-Infinity"
    reading = _readings(url)[trace_id].reading  # type: ignore[attr-defined]
    assert reading.execution.usage.prompt_tokens == 0
    assert any("1 token count(s) are not counts and were not counted, first span 'agent' "
               "llm.token_count.prompt 'Infinity'" in n for n in reading.notes), reading.notes


def test_a_body_that_stops_arriving_is_answered_408_and_a_client_that_leaves_is_no_error(
        tmp_path, capfd):
    """A client that never finishes sending held its request open for ever (no answer); one
    that left half-way ended in a traceback in the server's log."""
    import socket
    import time

    url = f"sqlite:///{tmp_path}/runs.db"
    head = (b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
            b"\r\nContent-Length: 1000\r\n\r\n{\"resourceSpans\"")
    with serve(url, body_idle_s=1.0) as served:
        host, port = served.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as left:
            left.sendall(head)
        time.sleep(0.5)
        with socket.create_connection((host, int(port))) as stalled:
            stalled.settimeout(20)
            stalled.sendall(head)
            started = time.monotonic()
            answer = b""
            while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
                chunk = stalled.recv(4096)
                if not chunk:
                    break
                answer += chunk
        assert time.monotonic() - started < 10
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        detail = orjson.loads(answer.split(b"\r\n\r\n", 1)[1])
        assert detail["code"] == "request_timeout"
        assert "nothing came for 1 s after 16 bytes of the 1000 promised" in detail["detail"]
        _, spans = agent_trace("q", "a")
        assert _post(served.url, orjson.dumps(export(*spans))).status_code == 200
    assert "Traceback" not in capfd.readouterr().err


def _protobuf_export(trace_id: str, name: str) -> bytes:
    """An ExportTraceServiceRequest of one span, as the SDK's exporter serialises one."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    one = request.resource_spans.add().scope_spans.add().spans.add()
    one.trace_id, one.span_id, one.name = bytes.fromhex(trace_id), secrets.token_bytes(8), name
    one.start_time_unix_nano, one.end_time_unix_nano = 1_790_000_000 * 10**9, 1_790_000_001 * 10**9
    return request.SerializeToString()


def test_every_member_of_a_gzip_body_is_read_and_data_after_it_is_refused(tmp_path):
    """Concatenated gzip members are one gzip body (and concatenated protobuf messages one
    message): the spans after the first member were dropped while the answer said every span
    was taken. Anything after the data is refused, not ignored."""
    url = f"sqlite:///{tmp_path}/runs.db"
    first, second = secrets.token_hex(16), secrets.token_hex(16)
    body = gzip.compress(_protobuf_export(first, "a")) + \
        gzip.compress(_protobuf_export(second, "b"))
    with serve(url) as served:
        response = _post(served.url, body, content_type="application/x-protobuf",
                         **{"content-encoding": "gzip"})
        assert response.status_code == 200, response.text
        _, more = agent_trace("q", "a")
        trailing = _post(served.url, gzip.compress(orjson.dumps(export(*more))) + b"junk",
                         **{"content-encoding": "gzip"})
        assert trailing.status_code == 400
        assert "not valid gzip data" in trailing.json()["detail"]
        deflated = _post(served.url, zlib.compress(orjson.dumps(export(*more))) + b"x",
                         **{"content-encoding": "deflate"})
        assert deflated.status_code == 400
        assert "1 bytes after the end of its deflate data" in deflated.json()["detail"]
    assert {t.trace_id for t in list_traces(RunStore(url))} == {first, second}


def test_a_rejection_quotes_the_request_cut_short_and_with_its_escapes_visible(tmp_path):
    """An unknown field's name came back whole in the answer, escapes and all: five spans
    with a 2 MB key made a 10 MB answer, which an exporter may log to a terminal."""
    url = f"sqlite:///{tmp_path}/runs.db"
    key = "\x1b[2J" + "k" * 2_000_000
    hostile = [_with(span(secrets.token_hex(16), "n"), **{key: 1}) for _ in range(5)]
    with serve(url) as served:
        response = _post(served.url, orjson.dumps(export(*hostile)))
    assert response.status_code == 200
    assert len(response.content) < 5 * 1000
    message = response.json()["partialSuccess"]["errorMessage"]
    assert "\x1b" not in message
    assert message.startswith("span 'n': \\x1b[2Jkkk")
    assert response.json()["partialSuccess"]["rejectedSpans"] == "5"


def test_a_span_sent_again_is_taken_once_and_a_changed_one_is_rejected_naming_its_ids(
        store_url):
    """A different span under a stored span's trace and span ids was dropped unsaid and
    counted as taken; the same span again is taken and stored once."""
    trace_id = secrets.token_hex(16)
    root = span(trace_id, "agent", **{"input.value": "q", "output.value": "a"})
    tool = span(trace_id, "tool", parent=str(root["spanId"]))
    changed_root = _with(root, status={"code": 2}, attributes=[
        {"key": "output.value", "value": {"stringValue": "b"}}])
    changed_tool = _with(tool, name="tool, renamed")
    with serve(store_url) as served:
        assert _post(served.url, orjson.dumps(export(root))).json() == {}
        again = _post(served.url, orjson.dumps(export(root)))  # an exporter retrying
        assert again.status_code == 200 and again.json() == {}
        # a changed span of a stored one; a new span, a changed copy and the same again in
        # one batch
        clash = _post(served.url, orjson.dumps(export(changed_root, tool, changed_tool, tool)))
        assert clash.status_code == 200, clash.text
        partial = clash.json()["partialSuccess"]
        assert partial["rejectedSpans"] == "2"
        for changed in (changed_root, changed_tool):
            assert (f"of trace {trace_id} with span id {changed['spanId']} conflicts with the "
                    "stored span") in partial["errorMessage"], partial["errorMessage"]
        both = _post(served.url, orjson.dumps(export(root, tool)))  # both as stored: taken
        assert both.status_code == 200 and both.json() == {}
    store = RunStore(store_url)
    stored, total, _ = trace_spans(store, trace_id)
    assert total == 2
    assert [(s.name, s.attributes.get("output.value")) for s in stored] == [
        ("agent", "a"), ("tool", None)]
    (row,) = list_traces(store)
    assert row.has_error is False  # the rejected span's error status is not the trace's


def test_the_stock_exporter_sending_a_changed_span_again_is_told_it_conflicts(tmp_path):
    """The SDK's exporter (protobuf) sends a span, then the same span again (taken), then a
    span changed under the same ids (rejected in the answer's partial success)."""
    import requests
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    url = f"sqlite:///{tmp_path}/runs.db"
    kept = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(kept))
    with provider.get_tracer("test").start_as_current_span("agent") as root:
        root.set_attribute("output.value", "4")
    (sent,) = kept.get_finished_spans()
    changed = ReadableSpan(
        name=sent.name, context=sent.context, parent=sent.parent, resource=sent.resource,
        attributes={"output.value": "5"}, kind=sent.kind, status=sent.status,
        start_time=sent.start_time, end_time=sent.end_time,
        instrumentation_scope=sent.instrumentation_scope)
    session = requests.Session()
    answers: list[requests.Response] = []
    session.hooks["response"].append(lambda response, *_, **__: answers.append(response))
    with serve(url) as served:
        exporter = OTLPSpanExporter(endpoint=served.url + "/v1/traces", session=session)
        for one in (sent, sent, changed):
            assert exporter.export([one]) is SpanExportResult.SUCCESS
    partials = [ExportTraceServiceResponse.FromString(a.content).partial_success
                for a in answers]
    assert [p.rejected_spans for p in partials] == [0, 0, 1]
    trace_id = format(sent.context.trace_id, "032x")
    span_id = format(sent.context.span_id, "016x")
    assert (f"span 'agent' of trace {trace_id} with span id {span_id} conflicts with the "
            "stored span") in partials[2].error_message
    (stored,), _, _ = trace_spans(RunStore(url), trace_id)
    assert stored.attributes["output.value"] == "4"


def test_an_error_answer_to_a_protobuf_export_is_a_protobuf_status(tmp_path):
    """Every refusal of a protobuf export was JSON, which an OTLP exporter cannot read:
    OTLP/HTTP answers it a google.rpc.Status in protobuf, whatever refused it (the token and
    size checks before the receiver, the receiver itself). A JSON export's stay JSON."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    url = f"sqlite:///{tmp_path}/runs.db"
    kept = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(kept))
    with provider.get_tracer("test").start_as_current_span("agent"):
        pass
    session = requests.Session()
    answers: list[requests.Response] = []
    session.hooks["response"].append(lambda response, *_, **__: answers.append(response))
    protobuf = "application/x-protobuf"
    with serve(url, token=TOKEN, max_trace_bytes=4096) as served:
        refused = OTLPSpanExporter(endpoint=served.url + "/v1/traces", session=session)
        assert refused.export(kept.get_finished_spans()) is SpanExportResult.FAILURE
        (unauthorized,) = answers
        assert unauthorized.status_code == 401
        status = _status(unauthorized)
        assert status.code == 16  # UNAUTHENTICATED
        assert "a bearer token is required" in status.message
        assert _reason(status) == ("UNAUTHORIZED", "assay")
        not_protobuf = _post(served.url, b"\xff" * 20, content_type=protobuf, token=TOKEN)
        assert not_protobuf.status_code == 400
        status = _status(not_protobuf)
        assert status.code == 3  # INVALID_ARGUMENT
        assert "is not an OTLP ExportTraceServiceRequest in protobuf" in status.message
        too_big = _post(served.url, b"\x00" * 5000, content_type=protobuf, token=TOKEN)
        assert too_big.status_code == 413
        assert "the limit is 4096" in _status(too_big).message
        said_nothing = httpx.post(served.url + "/v1/traces", content=b"\xff" * 20,
                                  headers={"authorization": f"Bearer {TOKEN}"})
        assert said_nothing.status_code == 400 and _status(said_nothing).code == 3
        json_refused = _post(served.url, b"{not json", token=TOKEN)
        assert json_refused.status_code == 400
        assert json_refused.headers["content-type"] == "application/json"
        assert json_refused.json()["code"] == "invalid_otlp"
        assert _post(served.url, b"{}").json()["code"] == "unauthorized"
        assert httpx.get(served.url + "/runs").json()["code"] == "unauthorized"


def test_a_kind_outside_otlps_span_kinds_rejects_its_span_alone_naming_the_field(tmp_path):
    """A span's kind was taken as sent: a number outside SpanKind (0 to 5) was stored as no
    kind, a name outside it as a kind no reader knows. Now that span alone is rejected, from
    JSON and protobuf; the kinds OTLP has, and the SDK's exporter sends, are stored."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import SpanKind

    url = f"sqlite:///{tmp_path}/runs.db"
    trace_id = secrets.token_hex(16)
    good = [_with(span(trace_id, f"k{kind}"), kind=kind)
            for kind in (0, 2, 5, "SPAN_KIND_CLIENT")]
    bad = [_with(span(secrets.token_hex(16), "bad"), kind=kind)
           for kind in (6, -1, 2**40, True, 2.5, "SPAN_KIND_BOGUS")]
    request = ExportTraceServiceRequest.FromString(_protobuf_export(secrets.token_hex(16), "p"))
    request.resource_spans[0].scope_spans[0].spans[0].kind = 9  # proto3 enums are open
    with serve(url) as served:
        response = _post(served.url, orjson.dumps(export(*good, *bad)))
        assert response.status_code == 200, response.text
        partial = response.json()["partialSuccess"]
        assert partial["rejectedSpans"] == str(len(bad))
        assert ("span 'bad': kind 6 is not an OTLP SpanKind: expected 0 to 5 "
                "(SPAN_KIND_UNSPECIFIED, INTERNAL, SERVER, CLIENT, PRODUCER or CONSUMER)"
                in partial["errorMessage"]), partial["errorMessage"]
        assert "kind -1 is not an OTLP SpanKind" in partial["errorMessage"]
        last = _post(served.url, orjson.dumps(export(bad[-1]))).json()["partialSuccess"]
        assert "kind 'SPAN_KIND_BOGUS' is not an OTLP SpanKind" in last["errorMessage"]
        answer = _post(served.url, request.SerializeToString(),
                       content_type="application/x-protobuf")
        rejected = ExportTraceServiceResponse.FromString(answer.content).partial_success
        assert rejected.rejected_spans == 1
        assert "span 'p': kind 9 is not an OTLP SpanKind" in rejected.error_message
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(
            OTLPSpanExporter(endpoint=served.url + "/v1/traces")))
        tracer = provider.get_tracer("test")
        for kind in SpanKind:  # each in a trace of its own
            with tracer.start_as_current_span(kind.name, kind=kind):
                pass
        provider.shutdown()
    store = RunStore(url)
    assert [s.kind for s in trace_spans(store, trace_id)[0]] == [
        None, "server", "consumer", "client"]
    others = [t.trace_id for t in list_traces(store) if t.trace_id != trace_id]
    sdk_kinds = {s.name: s.kind for t in others for s in trace_spans(store, t)[0]}
    assert sdk_kinds == {k.name: k.name.lower() for k in SpanKind}
    assert len(others) == len(SpanKind)  # nothing rejected is stored


def test_a_server_without_protobuf_names_an_extra_that_exists(monkeypatch):
    """Without opentelemetry-proto a protobuf export is refused naming what to install: an
    extra assay has, which holds that package."""
    import re
    import sys
    import tomllib
    from pathlib import Path

    from assay.server import otlp

    monkeypatch.setitem(sys.modules,
                        "opentelemetry.proto.collector.trace.v1.trace_service_pb2", None)
    with pytest.raises(otlp.OtlpRefused) as refused:
        otlp._decode_protobuf(b"")
    found = re.search(r"install assay\[([a-z-]+)\]", refused.value.detail)
    assert found is not None, refused.value.detail
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml")
                            .read_text(encoding="utf-8"))["project"]
    extra = project["optional-dependencies"].get(found.group(1), [])
    assert any(d.startswith("opentelemetry-proto") for d in extra), (found.group(1), extra)
