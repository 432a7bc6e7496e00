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

A score that could not be computed is written as UiPath writes one: ``score`` 0.0, because the
format has no other way to say it. So that it cannot be taken for a real zero, its ``details``
is ``{"error": {"code": ..., "message": ...}}`` and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.model import Score, dump_json
from assay.report.outputs import write_atomic
from assay.suites.model import Suite

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


def render_uipath_output(results: Results, *, eval_set_name: str,
                         evaluation_names: Mapping[str, str] | None = None,
                         evaluator_names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The output-file object for ``results``.

    ``evaluation_names`` maps case ids to item names (default: the id); ``evaluator_names``
    maps evaluator ids (``Score.name``) to display names (default: the id).
    """
    items = evaluation_names or {}
    names = evaluator_names or {}
    return {
        "evaluationSetName": eval_set_name,
        "evaluationSetResults": [
            {
                "evaluationName": items.get(case_id, case_id),
                "evaluationRunResults": [
                    {"evaluatorName": names.get(score.name, score.name),
                     "evaluatorId": score.name,
                     "result": evaluator_result(score),
                     "isLineResult": False}
                    for score in scores
                ],
                "agentExecutionOutput": None,
            }
            for case_id, scores in results
        ],
        "datasetEvaluatorResults": {},
    }


def render_for_suite(suite: Suite, results: Results) -> dict[str, Any]:
    """:func:`render_uipath_output` with names taken from a suite (UiPath names if loaded
    from a UiPath eval set, else the suite's name and case ids)."""
    meta = suite.metadata.get("uipath") or {}
    return render_uipath_output(
        results, eval_set_name=str(meta.get("eval_set_name") or suite.name),
        evaluation_names=meta.get("evaluation_names"),
        evaluator_names=meta.get("evaluator_names"))


def render_for_records(result: Any) -> dict[str, Any]:
    """The output-file object of an :class:`~assay.results.EvaluationResult`."""
    results = [(r.case_id if not r.repeat else f"{r.case_id}#{r.repeat}", r.scores)
               for r in result.records]
    if result.suite is not None:
        return render_for_suite(result.suite, results)
    return render_uipath_output(results, eval_set_name=result.run.suite)


def write_uipath_output(path: str | Path, output: Mapping[str, Any]) -> None:
    """Write the object as indented JSON, replacing the file at once (see
    :mod:`assay.report.outputs`), so no reader sees half of it."""
    text = json.dumps(output, ensure_ascii=False, indent=2, default=str) + "\n"
    write_atomic(Path(path), text.encode("utf-8", "backslashreplace"), "--uipath-output")
