"""The OTLP/HTTP receiver of ``assay serve``: real exporters, real stores, hostile bodies."""

from __future__ import annotations

import concurrent.futures
import gzip
import secrets

import httpx
import orjson
import pytest

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
            assert answer.json()["code"] == "invalid_otlp"
            assert "ExportTraceServiceRequest" in answer.json()["detail"]
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
