"""A run's verdicts written back where its traces live: MLflow assessments, Phoenix span
annotations, or an OTLP JSON export.

Every case of a run of traces names its trace (``case.metadata["trace"]``); each score with a
value or an error becomes one assessment named ``assay.<evaluator>``, and the case's verdict
one named ``assay.verdict``, from the source ``assay:<run id>``. Writing back is idempotent:
MLflow assessments already logged from the same run are not logged again, Phoenix annotations
are upserted under the run's identifier, and the OTLP export's span ids are derived from the
run, trace and evaluator, so the same run written twice gives the same spans. A score that
was not applicable (skipped) is not written: it says nothing about the trace.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.run.sources.base import SourceError
from assay.run.sources.suite import TRACE_KEY
from assay.store.runs import RunStore
from assay.types.records import CaseRecord

PREFIX = "assay."


@dataclass(frozen=True)
class Verdict:
    """One thing said of one trace: an evaluator's score, or the case's verdict."""

    trace_id: str
    root_span_id: str | None
    name: str
    value: float | None
    label: str | None
    explanation: str | None
    error: tuple[str, str] | None = None
    start_time: float | None = None


@dataclass
class WriteBack:
    """What a write-back did: assessments written, those already there, traces it could not
    write to (each with why)."""

    target: str
    written: int = 0
    already: int = 0
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (f"{self.written} written, {self.already} already there"
                + (f", {len(self.problems)} not written" if self.problems else ""))


def verdicts(records: Iterable[CaseRecord]) -> Iterator[Verdict]:
    """What a run says of each trace it judged (cases without a trace are not traces)."""
    for record in records:
        meta = record.case.metadata.get(TRACE_KEY)
        if not isinstance(meta, dict) or not meta.get("id"):
            continue
        trace_id, root = str(meta["id"]), meta.get("root_span_id")
        start = meta.get("start_time")
        yield Verdict(trace_id, root, f"{PREFIX}verdict", record.score,
                      record.verdict.value, None, start_time=start)
        for score in record.scores:
            if score.skipped is not None:
                continue
            error = (score.error.code, score.error.message) if score.error else None
            label = None if score.passed is None else ("pass" if score.passed else "fail")
            yield Verdict(trace_id, root, PREFIX + score.name, score.value, label,
                          score.rationale, error, start)


def run_verdicts(store: RunStore, run_id: str) -> list[Verdict]:
    """The run's verdicts, its records read a page at a time: only the verdicts are kept,
    never the whole run's answers and transcripts."""
    return list(verdicts(store.iter_case_records(run_id)))


def trace_files(store: RunStore, run_id: str) -> dict[Path, str]:
    """The export files ``run_id``'s traces were read from (``otlp:FILE``,
    ``langfuse:FILE``), each with what it is: an OTLP export of its verdicts written over one
    would replace the traces with the verdicts."""
    found: dict[Path, str] = {}
    for record in store.case_records(run_id):
        meta = record.case.metadata.get(TRACE_KEY)
        source = meta.get("source") if isinstance(meta, dict) else None
        kind, _, address = source.partition(":") if isinstance(source, str) else ("", "", "")
        if kind in ("otlp", "langfuse") and address:
            found[Path(address)] = f"the trace file run {run_id} judged ({source})"
    return found


# -- MLflow --------------------------------------------------------------------------------


def to_mlflow(found: list[Verdict], run_id: str, tracking_uri: str) -> WriteBack:
    """Each verdict as an MLflow assessment (``mlflow.log_feedback``) on its trace."""
    from assay.run.sources.mlflow import MlflowSource, import_mlflow

    mlflow = import_mlflow()
    from mlflow.entities import AssessmentError, AssessmentSource

    source = MlflowSource(tracking_uri)
    report = WriteBack(source.name)
    client = source.client()
    source_id = f"assay:{run_id}"
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(tracking_uri)
    try:
        for trace_id, items in _by_trace(found).items():
            try:
                trace = source.call("reading the trace", client.get_trace, trace_id)
            except SourceError as exc:
                report.problems.append(f"trace {trace_id}: {exc.message}")
                continue
            there = {(a.name, a.source.source_id) for a in trace.info.assessments or []}
            for item in items:
                if (item.name, source_id) in there:
                    report.already += 1
                    continue
                value: Any = item.value if item.value is not None else item.label
                source.call(
                    "logging feedback", mlflow.log_feedback, trace_id=trace_id,
                    name=item.name, value=None if item.error else value,
                    error=AssessmentError(error_code=item.error[0],
                                          error_message=item.error[1]) if item.error else None,
                    rationale=item.explanation,
                    source=AssessmentSource(source_type="LLM_JUDGE", source_id=source_id),
                    metadata={"assay_run": run_id, **({"label": item.label}
                                                      if item.label else {})})
                report.written += 1
    finally:
        mlflow.set_tracking_uri(previous)
    return report


# -- Phoenix -------------------------------------------------------------------------------


def to_phoenix(found: list[Verdict], run_id: str, base_url: str) -> WriteBack:
    """Each verdict as a span annotation on its trace's root span, upserted under the run's
    identifier (so writing the run again replaces, never adds)."""
    from assay.run.sources.phoenix import PhoenixSource

    source = PhoenixSource(base_url)
    report = WriteBack(source.name)
    client = source.client()
    for item in found:
        if not item.root_span_id:
            report.problems.append(f"trace {item.trace_id}: its root span is not known, so "
                                   "there is no span to annotate")
            continue
        source.call("annotating the span", client.spans.add_span_annotation,
                    span_id=item.root_span_id, annotation_name=item.name,
                    annotator_kind="LLM", label=item.label, score=item.value,
                    explanation=(item.explanation or (item.error[1] if item.error else None)),
                    metadata={"assay_run": run_id}, identifier=f"assay:{run_id}", sync=True)
        report.written += 1
    return report


# -- OTLP JSON -----------------------------------------------------------------------------


def to_otlp(found: list[Verdict], run_id: str) -> dict[str, Any]:
    """An OTLP JSON export holding, for each verdict, a span under its trace's root span
    with OpenTelemetry's GenAI evaluation attributes (``gen_ai.evaluation.*``). Span ids are
    derived from the run, trace and name, so the same run gives the same export."""
    spans = []
    for item in found:
        key = f"{run_id}\0{item.trace_id}\0{item.name}".encode()
        span_id = hashlib.sha256(key).hexdigest()[:16]
        attributes = [_attr("gen_ai.evaluation.name", item.name.removeprefix(PREFIX)),
                      _attr("assay.run_id", run_id)]
        if item.value is not None:
            attributes.append({"key": "gen_ai.evaluation.score.value",
                               "value": {"doubleValue": item.value}})
        if item.label:
            attributes.append(_attr("gen_ai.evaluation.score.label", item.label))
        if item.explanation:
            attributes.append(_attr("gen_ai.evaluation.explanation", item.explanation))
        if item.error:
            attributes.append(_attr("error.type", item.error[0]))
        time = str(int((item.start_time or 0) * 1e9))
        span: dict[str, Any] = {
            "traceId": item.trace_id, "spanId": span_id, "name": "gen_ai.evaluation",
            "kind": 1, "startTimeUnixNano": time, "endTimeUnixNano": time,
            "attributes": attributes,
            "status": {"code": 2 if item.error else 0}}
        if item.root_span_id:
            span["parentSpanId"] = item.root_span_id
        spans.append(span)
    return {"resourceSpans": [{
        "resource": {"attributes": [_attr("service.name", "assay")]},
        "scopeSpans": [{"scope": {"name": "assay"}, "spans": spans}]}]}


def _attr(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _by_trace(found: list[Verdict]) -> dict[str, list[Verdict]]:
    grouped: dict[str, list[Verdict]] = {}
    for item in found:
        grouped.setdefault(item.trace_id, []).append(item)
    return grouped


def write_back(store: RunStore, run_id: str, target: str) -> WriteBack | dict[str, Any]:
    """Write ``run_id``'s verdicts to ``target`` (``mlflow:URI``, ``phoenix:URL``); ``otlp``
    returns the export for the caller to write."""
    from assay.errors import ConfigError

    found = run_verdicts(store, run_id)
    if not found:
        raise ConfigError(f"run {run_id} judged no traces: nothing to write back",
                          code="no_traces")
    kind, _, address = target.partition(":")
    if kind == "mlflow" and address:
        return to_mlflow(found, run_id, address)
    if kind == "phoenix" and address:
        return to_phoenix(found, run_id, address.partition("#")[0])
    if kind == "otlp":
        return to_otlp(found, run_id)
    raise ConfigError(f"write-back target {target[:120]!r}: expected mlflow:TRACKING_URI, "
                      "phoenix:URL or otlp:FILE.json", code="invalid_trace_source")
