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
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay._util.redact import scrub_data
from assay.report.outputs import write_atomic
from assay.suites.model import Suite
from assay.types.json import dump_json
from assay.types.score import Score

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


def render_uipath_output(results: Results, *, eval_set_name: str,
                         evaluation_names: Mapping[str, str] | None = None,
                         evaluator_names: Mapping[str, str] | None = None,
                         dataset_metrics: Mapping[str, Score] | None = None) -> dict[str, Any]:
    """The output-file object for ``results``.

    ``evaluation_names`` maps case ids to item names (default: the id); ``evaluator_names``
    maps evaluator ids (``Score.name``) to display names (default: the id);
    ``dataset_metrics`` are the run's dataset-level results (its summary's).
    """
    items = evaluation_names or {}
    names = evaluator_names or {}
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
                "agentExecutionOutput": None,
            }
            for case_id, scores in results
        ],
        "datasetEvaluatorResults": dataset_results(dataset_metrics or {}, names),
    }


def render_for_suite(suite: Suite, results: Results,
                     dataset_metrics: Mapping[str, Score] | None = None) -> dict[str, Any]:
    """:func:`render_uipath_output` with names taken from a suite (UiPath names if loaded
    from a UiPath eval set, else the suite's name and case ids)."""
    meta = suite.metadata.get("uipath") or {}
    return render_uipath_output(
        results, eval_set_name=str(meta.get("eval_set_name") or suite.name),
        evaluation_names=meta.get("evaluation_names"),
        evaluator_names=meta.get("evaluator_names"), dataset_metrics=dataset_metrics)


def render_for_records(result: Any) -> dict[str, Any]:
    """The output-file object of an :class:`~assay.run.result.EvaluationResult`."""
    results = [(r.case_id if not r.repeat else f"{r.case_id}#{r.repeat}", r.scores)
               for r in result.records]
    summary = getattr(result, "summary", None)
    metrics = summary.dataset_metrics if summary is not None else {}
    if result.suite is not None:
        return render_for_suite(result.suite, results, metrics)
    return render_uipath_output(results, eval_set_name=result.run.suite,
                                dataset_metrics=metrics)


def write_uipath_output(path: str | Path, output: Mapping[str, Any]) -> None:
    """Write the object as indented JSON, known secrets hidden (see :mod:`assay._util.redact`),
    replacing the file at once (see :mod:`assay.report.outputs`), so no reader sees half of
    it."""
    text = json.dumps(scrub_data(output), ensure_ascii=False, indent=2, default=str) + "\n"
    write_atomic(Path(path), text.encode("utf-8", "backslashreplace"), "--uipath-output")
