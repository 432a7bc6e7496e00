"""Spans per second that ``assay serve``'s OTLP/HTTP receiver takes into a run store.

Starts ``assay serve`` as a separate process on a new SQLite store (or ``--store URL``), then
sends ``--batches`` export requests of ``--batch`` spans each (512: the SDK's
``BatchSpanProcessor`` default) from ``--clients`` concurrent clients, as the stock exporter
sends them: protobuf made by the SDK's own encoder from real ``ReadableSpan`` objects (an
agent's trace shape: a root span with input and output, tool and LLM spans with OpenInference
attributes), gzip-compressed unless ``--no-gzip``. Every request must answer 200 with no
rejected span; the store's span count is checked against what was sent.

    python benchmarks/otlp_receiver.py                    # 200 batches of 512 spans, SQLite
    python benchmarks/otlp_receiver.py --clients 4 --batches 400
    python benchmarks/otlp_receiver.py --store "$ASSAY_TEST_POSTGRES_URL"
    python benchmarks/otlp_receiver.py --json            # OTLP JSON instead of protobuf

A measurement, not a test: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import gzip
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

from _common import free_port, machine_line, markdown_table  # noqa: E402


def spans_batch(size: int, traces: int = 8) -> list[Any]:
    """``size`` finished SDK spans over ``traces`` traces, as an instrumented agent makes."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    kept = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(kept))
    tracer = provider.get_tracer("bench")
    per_trace = max(2, size // traces)
    made = 0
    while made < size:
        with tracer.start_as_current_span("agent") as root:
            root.set_attribute("openinference.span.kind", "AGENT")
            root.set_attribute("input.value", "What is the weather in Paris? " * 4)
            made += 1
            for i in range(min(per_trace - 1, size - made)):
                with tracer.start_as_current_span(f"step {i}") as child:
                    if i % 2:
                        child.set_attribute("openinference.span.kind", "TOOL")
                        child.set_attribute("tool.name", "get_weather")
                        child.set_attribute("input.value", '{"city": "Paris"}')
                        child.set_attribute("output.value", "sunny, 21C")
                    else:
                        child.set_attribute("openinference.span.kind", "LLM")
                        child.set_attribute("llm.model_name", "gpt-4o-mini")
                        child.set_attribute("llm.token_count.prompt", 120)
                        child.set_attribute("llm.token_count.completion", 30)
                        child.set_attribute("output.value", "It is sunny. " * 8)
                made += 1
            root.set_attribute("output.value", "It is sunny and 21C in Paris.")
    provider.shutdown()
    return list(kept.get_finished_spans())[:size]


def bodies(batches: int, size: int, as_json: bool, compress: bool) -> list[bytes]:
    """Distinct request bodies: each batch's spans get new trace and span ids."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    template = encode_spans(spans_batch(size))
    out = []
    for _ in range(batches):
        request = type(template)()
        request.CopyFrom(template)
        ids: dict[bytes, bytes] = {}
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    span.trace_id = ids.setdefault(span.trace_id, secrets.token_bytes(16))
                    new = ids.setdefault(span.span_id, secrets.token_bytes(8))
                    span.span_id = new
                    if span.parent_span_id:
                        span.parent_span_id = ids.setdefault(span.parent_span_id,
                                                             secrets.token_bytes(8))
        if as_json:
            import orjson

            data = MessageToDict(request)
            for resource in data.get("resourceSpans", []):
                for scope in resource.get("scopeSpans", []):
                    for span in scope.get("spans", []):
                        for key in ("traceId", "spanId", "parentSpanId"):
                            if key in span:
                                import base64

                                span[key] = base64.b64decode(span[key]).hex()
            body = orjson.dumps(data)
        else:
            body = request.SerializeToString()
        out.append(gzip.compress(body, 6) if compress else body)
    return out


def serve(url: str, port: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("ASSAY_SERVER_TOKEN", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "serve", "--store", url, "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"assay serve did not start: {process.communicate()[1][-2000:]}")
        time.sleep(0.2)


def send(base: str, payloads: list[bytes], clients: int, as_json: bool,
         compress: bool) -> tuple[float, list[float], int]:
    """Seconds for all requests, each request's ms, and the failures."""
    headers = {"content-type": "application/json" if as_json else "application/x-protobuf"}
    if compress:
        headers["content-encoding"] = "gzip"
    latencies: list[float] = []
    failures = [0]
    lock = threading.Lock()
    queue = list(enumerate(payloads))

    def worker() -> None:
        with httpx.Client(base_url=base, headers=headers, timeout=120) as client:
            while True:
                with lock:
                    if not queue:
                        return
                    _, body = queue.pop()
                started = time.perf_counter()
                answer = client.post("/v1/traces", content=body)
                elapsed = (time.perf_counter() - started) * 1000
                bad = answer.status_code != 200 or b"rejected" in answer.content
                with lock:
                    latencies.append(elapsed)
                    failures[0] += bad

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started, latencies, failures[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--store", default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-gzip", action="store_true")
    args = parser.parse_args()
    compress = not args.no_gzip
    with tempfile.TemporaryDirectory() as folder:
        url = args.store or f"sqlite:///{folder}/runs.db"
        print("encoding", args.batches, "requests ...", file=sys.stderr)
        payloads = bodies(args.batches, args.batch, args.json, compress)
        port = free_port()
        process = serve(url, port)
        try:
            base = f"http://127.0.0.1:{port}"
            send(base, payloads[:2], 1, args.json, compress)  # warm-up (stored too)
            seconds, latencies, failures = send(base, payloads[2:], args.clients, args.json,
                                                compress)
        finally:
            process.terminate()
            process.wait(timeout=30)
        from sqlalchemy import create_engine, text

        with create_engine(url).connect() as conn:
            stored = conn.execute(text("SELECT count(*) FROM trace_spans")).scalar_one()
    sent = (len(payloads) - 2) * args.batch
    latencies.sort()
    body = sum(len(p) for p in payloads) / len(payloads) / 1024
    print(machine_line())
    print(markdown_table(
        ["store", "encoding", "clients", "spans sent", "seconds", "spans/s", "p50 ms/request",
         "p95 ms/request", "KiB/request", "failed requests", "spans stored"],
        [[url.split(":")[0], ("JSON" if args.json else "protobuf") + (" gzip" if compress
                                                                      else ""),
          args.clients, sent, round(seconds, 2), round(sent / seconds),
          round(latencies[len(latencies) // 2], 1),
          round(latencies[int(len(latencies) * 0.95)], 1), round(body, 1), failures,
          stored]]))


if __name__ == "__main__":
    main()
