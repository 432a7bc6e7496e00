"""The trace columns of MLflow 3's result table, for one case record.

``mlflow.genai.evaluate(...).result_df`` (3.17) has, after the scorers' and expectations'
``/value`` columns::

    trace, client_request_id, state, request_time, execution_duration, request, response,
    trace_metadata, tags, spans, assessments

and ``trace_id`` first. assay fills them from the record: ``trace`` is the execution's trace
as MLflow's trace JSON (``{"info": ..., "data": {"spans": [...]}}``; an execution with no
trace gets the one root span MLflow would record for a row answered without a trace, its
inputs and outputs), ``spans`` the same spans as dicts, ``assessments`` one entry per
judgement (``feedback``) and per expectation (``expectation``), as MLflow logs them.
``request`` and ``response`` are the inputs and the answer as given (a dict stays a dict), and
``execution_duration`` the agent's whole milliseconds (for a row answered from an MLflow
trace, the trace's own ``execution_duration_ms``). An MLflow trace in the data keeps its id,
request time and metadata; otherwise the trace id is made from the run, case and repeat, so
a record keeps it.
"""

from __future__ import annotations

import hashlib
import math
from datetime import UTC, datetime
from typing import Any

from assay.judges.feedback import is_measurement
from assay.run.policies.databricks.catalog import Assessment, native
from assay.types.json import dump_json
from assay.types.records import CaseRecord
from assay.types.spans import Span, root_span

TRACE_COLUMNS = ("trace", "client_request_id", "state", "request_time", "execution_duration",
                 "request", "response", "trace_metadata", "tags", "spans", "assessments")
"""MLflow 3's columns after the ``/value`` ones, in its order."""
PREVIEW_CHARS = 1000
"""How much of the request and response the trace's info previews (MLflow cuts them too)."""
STATUS = {"ok": "STATUS_CODE_OK", "error": "STATUS_CODE_ERROR", "unset": "STATUS_CODE_UNSET"}


def trace_id(record: CaseRecord) -> str:
    """The trace's own id when the data's MLflow trace has one; else a stable MLflow-style
    id (``tr-`` and 32 hex digits) made from the run, case and repeat."""
    given = (record.execution.trace_info or {}).get("trace_id")
    if isinstance(given, str) and given:
        return given
    seed = f"{record.run_id}\0{record.case_id}\0{record.repeat}".encode()
    return "tr-" + hashlib.sha256(seed).hexdigest()[:32]


def trace_columns(record: CaseRecord, found: list[Assessment],
                  expectations: dict[str, Any]) -> dict[str, Any]:
    """The record's trace columns (see the module docstring), in MLflow's order."""
    execution = record.execution
    info = execution.trace_info or {}
    spans = span_dicts(record)
    started = _request_time_ms(info.get("request_time")) or _root_start_ms(execution.trace)
    duration = execution_duration(record)
    state = "ERROR" if execution.error is not None else "OK"
    logged = _iso(record.finished_at)
    assessments = [assessment_dict(a) for a in found] + [
        {"assessment_name": key, "source": {"source_type": "HUMAN", "source_id": "data"},
         "expectation": {"value": value}} for key, value in expectations.items()]
    for index, entry in enumerate(assessments):  # what MLflow needs to read one back
        entry.update(assessment_id=f"a-{trace_id(record)[3:]}-{index}",
                     trace_id=trace_id(record), create_time=logged,
                     last_update_time=logged, valid=True)
    given = info.get("trace_metadata")
    metadata: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
    tags = dict(record.case.metadata) if record.case.metadata else {}
    shown = {"trace_id": trace_id(record), "trace_location": info.get("trace_location") or
             {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": "0"}},
             "state": state,
            "request_time": None if started is None else _iso(started / 1000),
            "execution_duration_ms": duration,
            "request_preview": _preview(record.input), "response_preview":
            _preview(execution.output), "trace_metadata": metadata, "tags": tags,
            "assessments": assessments}
    return {"trace": dump_json({"info": shown, "data": {"spans": spans}}),
            "client_request_id": None, "state": state, "request_time": started,
            "execution_duration": duration, "request": record.input,
            "response": execution.output, "trace_metadata": metadata, "tags": tags or None,
            "spans": spans, "assessments": assessments}


def execution_duration(record: CaseRecord) -> int | None:
    """The agent's time in whole milliseconds, as MLflow's ``execution_duration``: the
    latency (for a row answered from an MLflow trace, the trace's own
    ``execution_duration_ms``), cut to the millisecond."""
    latency = record.execution.latency_ms
    return None if latency is None else math.floor(latency)


def _iso(seconds: float | None) -> str | None:
    """Epoch seconds as MLflow writes a time (``2026-11-26T15:18:20.184Z``)."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


def _request_time_ms(value: Any) -> int | None:
    """An MLflow trace's request time (ISO text, or epoch milliseconds) in milliseconds."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return math.floor(datetime.fromisoformat(value.replace("Z", "+00:00"))
                              .timestamp() * 1000)
        except ValueError:
            return None
    return None


def _root_start_ms(trace: list[Span]) -> int | None:
    root = root_span(trace)
    if root is None or root.start_time is None:
        return None
    return math.floor(root.start_time * 1000)


def span_dicts(record: CaseRecord) -> list[dict[str, Any]]:
    """The execution's spans in MLflow's span JSON (what ``mlflow.entities.Span.from_dict``
    reads: hex ids, nanosecond times); one root span holding the inputs and the answer when
    the execution has no trace (what MLflow records for such a row)."""
    execution = record.execution
    owner = trace_id(record)
    if not execution.trace:
        return [{"trace_id": owner, "span_id": owner[3:19], "parent_span_id": None,
                 "name": "root_span", "start_time_unix_nano": 0,
                 "end_time_unix_nano": None, "events": [],
                 "status": {"code": STATUS["error" if execution.error else "ok"],
                            "message": execution.error or ""},
                 "attributes": {"mlflow.traceRequestId": dump_json(owner),
                                "mlflow.spanType": '"CHAIN"',
                                "mlflow.spanInputs": dump_json(record.input),
                                "mlflow.spanOutputs": dump_json(execution.output)}}]
    return [_span_dict(span, owner) for span in execution.trace]


def _span_dict(span: Span, owner: str) -> dict[str, Any]:
    message = span.attributes.get("otel.status_description")
    return {"trace_id": owner, "span_id": _hex_id(span.span_id, span.name),
            "parent_span_id": _hex_id(span.parent_id, None) if span.parent_id else None,
            "name": span.name, "start_time_unix_nano": _nanos(span.start_time) or 0,
            "end_time_unix_nano": _nanos(span.end_time),
            "events": [{"name": str(e.get("name", "")), "time_unix_nano":
                        _nanos(e.get("time")) or 0, "attributes": e.get("attributes") or {}}
                       for e in span.events],
            "status": {"code": STATUS[span.status],
                       "message": message if isinstance(message, str) else ""},
            "attributes": {"mlflow.traceRequestId": dump_json(owner), **span.attributes}}


def _hex_id(value: str | None, name: str | None) -> str:
    """A span id as MLflow reads one (16 hex digits): as it is when it is one, else a stable
    hash of it (a hand-written trace's ``"plan"``)."""
    text = value or name or ""
    if len(text) == 16 and all(c in "0123456789abcdef" for c in text):
        return text
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _nanos(seconds: Any) -> int | None:
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        return None
    return round(seconds * 1_000_000_000)


def assessment_dict(a: Assessment) -> dict[str, Any]:
    """One judgement as MLflow logs a feedback: its name, source, value, rationale, and the
    error that replaced the value."""
    score = a.score
    source = {"source_type": "LLM_JUDGE", "source_id": score.judge_model} \
        if score.judge_model else {"source_type": "CODE", "source_id": a.info.name}
    found: dict[str, Any] = {"assessment_name": a.mlflow_name, "source": source,
                             "feedback": {"value": native(score)}}
    if score.rationale is not None:
        found["rationale"] = score.rationale
    if score.error is not None:
        found["feedback"]["error"] = {"error_code": score.error.code,
                                      "error_message": score.error.message}
    elif score.skipped is not None and not is_measurement(score):
        found["metadata"] = {"not_applicable": score.skipped}
    return found


def _preview(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else dump_json(value)
    return text[:PREVIEW_CHARS]
