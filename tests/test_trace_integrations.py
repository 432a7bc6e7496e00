"""The trace path with every real part: an agent instrumented by OpenInference exporting with
the stock OTLP exporter to a real ``assay serve`` and to a real Phoenix server (its SQLite
storage), judged by ``assay run --traces``, and the verdicts written back."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

import assay
from assay.run.sources import SourceError, TraceQuery, open_source
from assay.run.sources.suite import read_traces
from assay.run.sources.writeback import write_back
from assay.store.runs import RunStore
from assay.store.traces import list_traces, trace_spans
from tests.server_support import free_port, stop_process, wait_until_up
from tests.trace_support import ROOT, assay_serve, export, span

pytestmark = [pytest.mark.traces, pytest.mark.process]
TOKEN = "a-test-token-long-enough-to-be-a-secret"
QUESTIONS = ("What is the capital of France?", "What is the capital of Italy?")


def _instrumented_calls(endpoint: str, model_url: str, headers: dict[str, str] | None = None,
                        project: str | None = None) -> None:
    """An OpenAI client instrumented by OpenInference asks the mock model each question;
    the spans go to ``endpoint`` through the stock OTLP/HTTP exporter, nothing else
    changed."""
    import openai
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": "capitals",
                                **({"openinference.project.name": project} if project
                                   else {})})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(
        endpoint=endpoint, headers=headers)))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        client = openai.OpenAI(base_url=model_url, api_key="test-key")
        for question in QUESTIONS:
            client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": question}])
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def test_an_instrumented_agent_exports_to_assay_serve_and_is_judged(
        tmp_path: Path, mock_server: Any) -> None:
    url = f"sqlite:///{tmp_path}/runs.db"
    with assay_serve(url, tmp_path, TOKEN) as base:
        _instrumented_calls(base + "/v1/traces", mock_server.url,
                            {"Authorization": f"Bearer {TOKEN}"})
        store = RunStore(url)
        rows = list_traces(store)
        assert len(rows) == 2 and {r.service for r in rows} == {"capitals"}
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        done = subprocess.run(
            [sys.executable, "-m", "assay", "run", "--traces", "store", "--store", url,
             "--judges", "safety", "--judge-model", f"{mock_server.url}#judge-model",
             ], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
        # 1: the mock judge fails one answer, and the run's gate says so (an answer, not an
        # error, which would be 2)
        assert done.returncode in (0, 1), done.stdout + done.stderr
        assert "safety: mean 0.500 (2 evaluator scores: 2 values" in done.stdout
        (run,) = store.run_records()
        records = store.case_records(run.id)
        assert sorted(str(r.execution.input) for r in records) == sorted(QUESTIONS)
        assert all(r.execution.output == f"mock answer: {r.execution.input}"
                   for r in records)
        assert all(r.execution.usage and r.execution.usage.prompt_tokens > 0
                   for r in records)
        assert {r.case_id for r in records} == {r.trace_id for r in rows}
        out = tmp_path / "verdicts.json"
        for _ in range(2):  # written twice: the same spans, stored once
            done = subprocess.run(
                [sys.executable, "-m", "assay", "writeback", run.id, "--to", f"otlp:{out}",
                 "--store", url], capture_output=True, text=True, cwd=tmp_path, env=env,
                timeout=120)
            assert done.returncode == 0, done.stderr
            posted = httpx.post(base + "/v1/traces", content=out.read_bytes(), headers={
                "content-type": "application/json", "authorization": f"Bearer {TOKEN}"})
            assert posted.status_code == 200 and posted.json() == {}
        for row in rows:
            spans, _, _ = trace_spans(store, row.trace_id)
            evaluations = [s for s in spans if s.name == "gen_ai.evaluation"]
            assert sorted(s.attributes["gen_ai.evaluation.name"] for s in evaluations) == [
                "safety", "verdict"]


def test_a_trace_of_100000_spans_is_stored_and_read_with_a_note(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/runs.db"
    trace_id = secrets.token_hex(16)
    root = secrets.token_hex(8)
    with assay_serve(url, tmp_path) as base:
        body = orjson.dumps(export(span(trace_id, "agent", span_id=root,
                                        **{"input.value": "q", "output.value": "a"})))
        assert httpx.post(base + "/v1/traces", content=body,
                          headers={"content-type": "application/json"}).status_code == 200
        for batch in range(20):
            spans = [span(trace_id, f"step {batch}.{i}", parent=root) for i in range(5000)]
            answer = httpx.post(base + "/v1/traces", content=orjson.dumps(export(*spans)),
                                headers={"content-type": "application/json"}, timeout=120)
            assert answer.status_code == 200, answer.text
        assert httpx.get(base + "/health").status_code == 200
    (case,) = read_traces(open_source(f"store:{url}"), TraceQuery())
    assert case.trace.span_count == 100_001
    assert len(case.reading.execution.trace) == 10_000
    assert any("the trace has 100001 spans" in n for n in case.reading.notes)
    assert case.reading.execution.output == "a"


# -- Phoenix ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Phoenix server on 127.0.0.1 with its SQLite storage in a temporary folder."""
    folder = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(folder), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(free_port()),
           "PHOENIX_SQL_DATABASE_URL": f"sqlite:///{folder}/phoenix.db",
           "PHOENIX_TELEMETRY_ENABLED": "false"}
    log = (folder / "phoenix.log").open("w")
    process = subprocess.Popen([sys.executable, "-m", "phoenix.server.main", "serve"],
                               env=env, stdout=log, stderr=subprocess.STDOUT, cwd=folder)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(process, base + "/healthz", 240,
                      lambda: (folder / "phoenix.log").read_text()[-3000:])
        yield base
    finally:
        stop_process(process, 30)
        log.close()


def test_phoenix_traces_are_judged_and_annotated_once(phoenix: str, tmp_path: Path,
                                                      mock_server: Any) -> None:
    _instrumented_calls(phoenix + "/v1/traces", mock_server.url, project="capitals")
    source = f"phoenix:{phoenix}#capitals"
    deadline = time.monotonic() + 60
    while True:  # Phoenix writes its spans in batches, and makes the project with the first
        with contextlib.suppress(SourceError):
            if len(read_traces(open_source(source), TraceQuery())) == 2:
                break
        assert time.monotonic() < deadline, "Phoenix did not keep the spans"
        time.sleep(0.5)
    store = f"sqlite:///{tmp_path}/runs.db"
    result = assay.evaluate(traces=source, store=store, evaluators=[
        {"type": "contains", "search_text": "capital", "name": "mentions_capital"}])
    assert result.summary.cases == 2
    assert sorted(str(r.execution.input) for r in result.records) == sorted(QUESTIONS)
    assert all(r.verdict.value == "pass" for r in result.records)
    runs = RunStore(store)
    for _ in range(2):
        done = write_back(runs, result.run_id, f"phoenix:{phoenix}")
        assert not isinstance(done, dict) and (done.written, done.problems) == (4, [])
    from phoenix.client import Client

    client = Client(base_url=phoenix)
    roots = [r.case.metadata["trace"]["root_span_id"] for r in result.records]
    annotations = client.spans.get_span_annotations(span_ids=roots,
                                                    project_identifier="capitals")
    names = sorted(a["name"] for a in annotations)
    assert names == ["assay.mentions_capital"] * 2 + ["assay.verdict"] * 2
    assert all(a["result"]["score"] == 1.0 for a in annotations
               if a["name"] == "assay.mentions_capital")


def test_an_unreachable_phoenix_is_a_clear_error() -> None:
    with pytest.raises(SourceError) as error:
        read_traces(open_source(f"phoenix:http://127.0.0.1:{free_port()}"), TraceQuery())
    assert "reading spans failed" in error.value.message
