"""OTLP JSON exports made to order for the trace tests, and a real ``assay serve`` process."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.ci_support import need
from tests.server_support import free_port, stop_process, wait_until_up

ROOT = Path(__file__).resolve().parent.parent


def trace_part(module: str) -> ModuleType:
    """A real part of the trace tests (MLflow, Phoenix's client, Langfuse), imported; missing,
    a skip, and a failure under CI, where scripts/setup.sh installs it."""
    return need(module, "trace", "bash scripts/setup.sh installs it (pyproject's dev group)")


def attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        typed: dict[str, Any] = {"boolValue": value}
    elif isinstance(value, int):
        typed = {"intValue": str(value)}
    elif isinstance(value, float):
        typed = {"doubleValue": value}
    else:
        typed = {"stringValue": str(value)}
    return {"key": key, "value": typed}


def span(trace_id: str | None, name: str, *, span_id: str | None = None,
         parent: str | None = None, start: float = 1_790_000_000.0, end: float | None = None,
         error: bool = False, **attributes: Any) -> dict[str, Any]:
    """One OTLP JSON span (times in seconds)."""
    found: dict[str, Any] = {
        "spanId": span_id or secrets.token_hex(8), "name": name,
        "startTimeUnixNano": str(int(start * 1e9)),
        "endTimeUnixNano": str(int((end if end is not None else start + 0.5) * 1e9)),
        "attributes": [attr(k.replace("__", "."), v) for k, v in attributes.items()],
        "status": {"code": 2 if error else 1}}
    if trace_id is not None:
        found["traceId"] = trace_id
    if parent:
        found["parentSpanId"] = parent
    return found


def export(*spans: dict[str, Any], service: str = "agent") -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": [attr("service.name", service)]},
                               "scopeSpans": [{"scope": {"name": "test"},
                                               "spans": list(spans)}]}]}


def agent_trace(question: str, answer: str, *, trace_id: str | None = None,
                start: float = 1_790_000_000.0, error: bool = False,
                **root_attributes: Any) -> tuple[str, list[dict[str, Any]]]:
    """A trace of an agent that answered ``question`` with ``answer`` after one tool call and
    one model call (OpenInference's attributes)."""
    trace_id = trace_id or secrets.token_hex(16)
    root = secrets.token_hex(8)
    return trace_id, [
        span(trace_id, "agent", span_id=root, start=start, end=start + 2, error=error,
             **{"input.value": question, "output.value": answer,
                "openinference.span.kind": "AGENT", **root_attributes}),
        span(trace_id, "lookup", parent=root, start=start + 0.1, end=start + 0.3,
             **{"tool.name": "lookup", "input.value": '{"q": "capital"}',
                "output.value": "Paris", "openinference.span.kind": "TOOL"}),
        span(trace_id, "llm", parent=root, start=start + 0.4, end=start + 1.9,
             **{"llm.token_count.prompt": 12, "llm.token_count.completion": 5,
                "openinference.span.kind": "LLM"}),
    ]


@contextmanager
def assay_serve(store_url: str, cwd: Path, token: str | None = None,
                *args: str) -> Iterator[str]:
    """A real ``assay serve`` process on a free port; its base URL."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("ASSAY_SERVER_TOKEN", None)
    if token:
        env["ASSAY_SERVER_TOKEN"] = token
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "serve", "--store", store_url, "--port", str(port),
         *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(process, base + "/health", 60, process.communicate)
        yield base
    finally:
        stop_process(process)
