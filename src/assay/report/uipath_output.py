"""Results in the shape of UiPath's ``uipath eval --output-file``, for tools that read it.

The file is::

    {"evaluationSetName": ...,
     "evaluationSetResults": [
        {"evaluationName": ..., "evaluationRunResults": [
            {"evaluatorName": ..., "evaluatorId": ...,
             "result": {"score": ..., "details": ..., "evaluationTime": ...},
             "isLineResult": false}],
         "agentExecutionOutput": null}],
     "datasetEvaluatorResults": {}}

``score`` is the 0-1 value, as UiPath's coded evaluators write it (pass/fail checks give 0.0 or
1.0, again like UiPath's coded exact match). ``evaluationTime`` is in seconds. ``details`` holds
the evaluator's details plus its ``justification`` and is left out when there are neither.

An evaluator run line by line also gets one entry per line before its own, as UiPath's
runtime writes them: ``"<name> (Line n)"``, id ``<id>_line_<n>``, ``isLineResult: true``.
``datasetEvaluatorResults`` holds the run's dataset-level results: an exact match's
aggregators by UiPath's keys (``<name>::fscore``, ``<name>::confusion_matrix``; a confusion
matrix has no headline, so its ``score`` is 0.0 as UiPath writes it, with the matrix in
``details``), and a classification evaluator's metric (``<name>::precision``).

A score that could not be computed is written as UiPath writes one: ``score`` 0.0, because the
format has no other way to say it. So that it cannot be taken for a real zero, its ``details``
is ``{"error": {"code": ..., "message": ...}}`` and nothing else.

With ``verbose`` (``uipath eval --verbose``) each item's ``agentExecutionOutput`` holds what
the agent did: ``{"execution_time": seconds, "trace": {"spans": [{name, status, attributes,
parent_name, events}]}, "result": {"output", "status": "successful" | "faulted", "error":
{code, title, detail, category} | null}}``.

:func:`trace_lines` is ``uipath eval --trace-file``: one JSON line per span, in the shape the
OpenTelemetry SDK's ``span.to_json()`` writes (which assay's trace reader reads back): per item
a root span (``span_type: eval``, ``evalId``), the agent's own spans under it, and per
evaluator an ``Evaluator: <id>`` span with its ``Evaluation output`` (``value``,
``justification``), as UiPath's runtime traces them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assay._util.redact import scrub_data
from assay.report.outputs import write_atomic
from assay.suites.model import Suite
from assay.types.execution import Execution
from assay.types.json import dump_json
from assay.types.records import CaseRecord
from assay.types.score import Score
from assay.types.spans import Span

Results = Sequence[tuple[str, Sequence[Score]]]
"""(case id, that case's scores) pairs, in the order they should be written."""


def _jsonable(value: Any) -> Any:
    """Plain JSON data: what ``dump_json`` would write, read back."""
    return json.loads(dump_json(value))


def evaluator_result(score: Score) -> dict[str, Any]:
    """One score as UiPath's ``EvaluationResultDto``: ``{score, details?, evaluationTime}``."""
    seconds = None if score.latency_ms is None else score.latency_ms / 1000.0
    if score.error is not None:
        return {"score": 0.0,
                "details": {"error": {"code": score.error.code,
                                      "message": score.error.message}},
                "evaluationTime": seconds}
    details: dict[str, Any] = dict(_jsonable(score.details)) if score.details else {}
    if score.rationale:
        details["justification"] = score.rationale
    result: dict[str, Any] = {"score": score.value}
    if details:
        result["details"] = details
    result["evaluationTime"] = seconds
    return result


def line_results(score: Score, name: str) -> list[dict[str, Any]]:
    """One entry per line of a line-by-line score, as UiPath's runtime writes them."""
    lines = (score.details or {}).get("lines") if score.value is not None else None
    if not isinstance(lines, list):
        return []
    entries = []
    for line in lines:
        if not isinstance(line, dict) or "line" not in line:
            continue
        number = line["line"]
        details = {k: line[k] for k in ("expected", "actual", "problem") if k in line}
        entries.append({"evaluatorName": f"{name} (Line {number})",
                        "evaluatorId": f"{score.name}_line_{number}",
                        "result": {"score": line.get("value"),
                                   **({"details": _jsonable(details)} if details else {}),
                                   "evaluationTime": None},
                        "isLineResult": True})
    return entries


def dataset_results(metrics: Mapping[str, Score],
                    evaluator_names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``datasetEvaluatorResults``: every dataset-level result, keyed as UiPath keys them."""
    names = evaluator_names or {}
    found: dict[str, Any] = {}
    for ident, metric in metrics.items():
        shown = names.get(ident, ident)
        results = metric.parts or [metric]
        for part in results:
            key = part.name.replace(ident, shown, 1) if part is not metric else (
                f"{shown}::{(metric.details or {}).get('metric_type', 'score')}")
            entry: dict[str, Any] = {"score": part.value if part.value is not None else 0.0}
            if part.error is not None:
                entry["details"] = {"error": {"code": part.error.code,
                                              "message": part.error.message}}
            elif part.details:
                entry["details"] = _jsonable(part.details)
            found[key] = entry
    return found


def execution_output(execution: Execution) -> dict[str, Any]:
    """UiPath's ``agentExecutionOutput`` of one item (``uipath eval --verbose``)."""
    names = {s.span_id: s.name for s in execution.trace if s.span_id}
    error = None if execution.error is None else {
        "code": execution.error_code or "target_failed", "title": "The agent failed",
        "detail": execution.error, "category": "User"}
    return {
        "execution_time": None if execution.latency_ms is None
        else execution.latency_ms / 1000.0,
        "trace": {"spans": [{"name": s.name, "status": s.status,
                             "attributes": _jsonable(s.attributes),
                             "parent_name": names.get(s.parent_id or ""),
                             "events": _jsonable(s.events)} for s in execution.trace]},
        "result": {"output": _jsonable(execution.output),
                   "status": "faulted" if error else "successful", "error": error},
    }


def render_uipath_output(results: Results, *, eval_set_name: str,
                         evaluation_names: Mapping[str, str] | None = None,
                         evaluator_names: Mapping[str, str] | None = None,
                         dataset_metrics: Mapping[str, Score] | None = None,
                         executions: Mapping[str, Execution] | None = None) -> dict[str, Any]:
    """The output-file object for ``results``.

    ``evaluation_names`` maps case ids to item names (default: the id); ``evaluator_names``
    maps evaluator ids (``Score.name``) to display names (default: the id);
    ``dataset_metrics`` are the run's dataset-level results (its summary's); ``executions``
    (by the same keys as ``results``) fills each item's ``agentExecutionOutput`` (verbose).
    """
    items = evaluation_names or {}
    names = evaluator_names or {}
    done = executions or {}
    return {
        "evaluationSetName": eval_set_name,
        "evaluationSetResults": [
            {
                "evaluationName": items.get(case_id, case_id),
                "evaluationRunResults": [
                    entry for score in scores for entry in [
                        *line_results(score, names.get(score.name, score.name)),
                        {"evaluatorName": names.get(score.name, score.name),
                         "evaluatorId": score.name,
                         "result": evaluator_result(score),
                         "isLineResult": False}]
                ],
                "agentExecutionOutput": execution_output(done[case_id])
                if case_id in done else None,
            }
            for case_id, scores in results
        ],
        "datasetEvaluatorResults": dataset_results(dataset_metrics or {}, names),
    }


def render_for_suite(suite: Suite, results: Results,
                     dataset_metrics: Mapping[str, Score] | None = None,
                     executions: Mapping[str, Execution] | None = None) -> dict[str, Any]:
    """:func:`render_uipath_output` with names taken from a suite (UiPath names if loaded
    from a UiPath eval set, else the suite's name and case ids)."""
    meta = suite.metadata.get("uipath") or {}
    return render_uipath_output(
        results, eval_set_name=str(meta.get("eval_set_name") or suite.name),
        evaluation_names=meta.get("evaluation_names"),
        evaluator_names=meta.get("evaluator_names"), dataset_metrics=dataset_metrics,
        executions=executions)


def _key(record: CaseRecord) -> str:
    return record.case_id if not record.repeat else f"{record.case_id}#{record.repeat}"


def render_for_records(result: Any, verbose: bool = False) -> dict[str, Any]:
    """The output-file object of an :class:`~assay.run.result.EvaluationResult`; with
    ``verbose``, each item's ``agentExecutionOutput`` too."""
    records = list(result.records)
    results = [(_key(r), r.scores) for r in records]
    executions = {_key(r): r.execution for r in records} if verbose else None
    summary = getattr(result, "summary", None)
    metrics = summary.dataset_metrics if summary is not None else {}
    if result.suite is not None:
        return render_for_suite(result.suite, results, metrics, executions)
    return render_uipath_output(results, eval_set_name=result.run.suite,
                                dataset_metrics=metrics, executions=executions)


# -- the trace file (uipath eval --trace-file) -----------------------------------------------


def _hex(*parts: str, size: int) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:size]


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _span_line(name: str, trace_id: str, span_id: str, parent_id: str | None,
               start: float | None, end: float | None, attributes: Mapping[str, Any],
               status: str = "unset", events: Sequence[Any] = ()) -> dict[str, Any]:
    """One span as the OpenTelemetry SDK's ``span.to_json()`` writes it."""
    return {"name": name, "context": {"trace_id": f"0x{trace_id}", "span_id": f"0x{span_id}"},
            "kind": "SpanKind.INTERNAL",
            "parent_id": f"0x{parent_id}" if parent_id else None,
            "start_time": _iso(start), "end_time": _iso(end),
            "status": {"status_code": status.upper()}, "attributes": _jsonable(attributes),
            "events": _jsonable(list(events)), "links": []}


def record_spans(run_id: str, record: CaseRecord,
                 evaluator_names: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The spans of one item: its root, the agent's own spans, each evaluator's."""
    key = _key(record)
    trace_id = _hex(run_id, key, size=32)
    root = _hex(run_id, key, "root", size=16)
    end = record.finished_at
    took = record.execution.latency_ms
    start = end - took / 1000 if end is not None and took is not None else end
    lines = [_span_line("Evaluation", trace_id, root, None, start, end, {
        "evalId": record.case_id, "span_type": "eval", "execution.id": key},
        "error" if record.execution.error else "unset")]
    for index, span in enumerate(record.execution.trace):
        lines.append(_agent_span(span, trace_id, root, _hex(run_id, key, str(index), size=16)))
    names = evaluator_names or {}
    for score in record.scores:
        own = _hex(run_id, key, "evaluator", score.name, size=16)
        attributes = {"span_type": "evaluator", "evaluator_id": score.name,
                      "evaluator_name": names.get(score.name, score.name),
                      "eval_item_id": record.case_id, "execution.id": key}
        lines.append(_span_line(f"Evaluator: {names.get(score.name, score.name)}", trace_id,
                                own, root, end, end, attributes))
        justification = score.rationale if score.error is None else score.error.message
        lines.append(_span_line("Evaluation output", trace_id,
                                _hex(run_id, key, "output", score.name, size=16), own, end, end,
                                {"span.type": "evalOutput", "value": score.value,
                                 "evaluatorId": score.name, "justification": justification,
                                 "execution.id": key},
                                "error" if score.error is not None else "unset"))
    return lines


def _agent_span(span: Span, trace_id: str, root: str, made_up: str) -> dict[str, Any]:
    """An agent span, under the item's root when it has no parent of its own."""
    span_id = (span.span_id or made_up).removeprefix("0x")
    parent = span.parent_id.removeprefix("0x") if span.parent_id else root
    return _span_line(span.name, trace_id, span_id.rjust(16, "0")[-16:], parent,
                      span.start_time, span.end_time, span.attributes, span.status, span.events)


def trace_lines(result: Any) -> Iterator[str]:
    """``uipath eval --trace-file``'s lines for a run, known secrets hidden."""
    names = ((result.suite.metadata.get("uipath") or {}).get("evaluator_names")
             if result.suite is not None else None)
    for record in result.records:
        for span in record_spans(result.run_id, record, names):
            yield json.dumps(scrub_data(span), ensure_ascii=False, default=str)


def write_uipath_output(path: str | Path, output: Mapping[str, Any]) -> None:
    """Write the object as indented JSON, known secrets hidden (see :mod:`assay._util.redact`),
    replacing the file at once (see :mod:`assay.report.outputs`), so no reader sees half of
    it."""
    text = json.dumps(scrub_data(output), ensure_ascii=False, indent=2, default=str) + "\n"
    write_atomic(Path(path), text.encode("utf-8", "backslashreplace"), "--uipath-output")
