"""Rows for a spreadsheet or a script: a run's cases and a comparison's cases as CSV or JSON.

The web UI's export buttons and the REST API's export endpoints write through here, so a
download is the same whichever asked for it. Values are the data's own (a score is its
number, not the text a page shows it as); text is the case's, with the known secrets hidden.
A CSV cell that a spreadsheet would run as a formula (one that starts with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return) starts with a ``'`` instead: the file is data, and
the agents' outputs in it are hostile.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

import orjson

from assay._util.redact import scrub, scrub_json

Format = Literal["csv", "json"]
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A value as a CSV cell: numbers as they are, text scrubbed of secrets and never a
    formula, anything else as JSON text."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return value
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    text = scrub(text)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_lines(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """The header, then one line per row (a value a row lacks is an empty cell)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(columns)
    yield buffer.getvalue()
    for row in rows:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow([csv_cell(row.get(c)) for c in columns])
        yield buffer.getvalue()


def json_chunks(rows: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
    """A JSON array of the rows, a row at a time, secrets hidden."""
    yield b"["
    first = True
    for row in rows:
        yield (b"" if first else b",\n") + scrub_json(orjson.dumps(
            row, option=orjson.OPT_NON_STR_KEYS, default=str).decode()).encode()
        first = False
    yield b"]\n"


def chunks(fmt: Format, columns: Sequence[str],
           rows: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
    """The rows in ``fmt``, as the bytes of a file."""
    if fmt == "json":
        return json_chunks(rows)
    return (line.encode("utf-8") for line in csv_lines(columns, rows))


MEDIA_TYPES: dict[str, str] = {"csv": "text/csv; charset=utf-8",
                               "json": "application/json"}

CASE_COLUMNS = ("case_id", "repeat", "verdict", "score", "latency_ms", "input", "expected",
                "output", "target_error", "failing_evaluator", "rationale")


def case_columns(evaluators: Sequence[str]) -> list[str]:
    """A run's export columns: the case's, then each evaluator's value and state."""
    return [*CASE_COLUMNS, *(f"{name}{part}" for name in evaluators
                             for part in ("", " state"))]


def case_row(row: Any, evaluators: Sequence[str]) -> dict[str, Any]:
    """One case of a page of cases (:class:`assay.store.queries.CaseRow`) as an export row."""
    found: dict[str, Any] = {
        "case_id": row.case_id, "repeat": row.repeat, "verdict": row.verdict.value,
        "score": row.score, "latency_ms": row.latency_ms, "input": row.input_preview,
        "expected": row.expected_preview, "output": row.output_preview,
        "target_error": row.target_error, "failing_evaluator": row.failing_evaluator,
        "rationale": row.rationale_preview}
    for name in evaluators:
        cell = row.scores.get(name)
        found[name] = None if cell is None else cell.value
        found[f"{name} state"] = None if cell is None else (
            cell.state if cell.state != "value" or cell.passed is None
            else "passed" if cell.passed else "failed")
    return found


COMPARISON_COLUMNS = ("case_id", "status", "baseline_passed", "candidate_passed",
                      "baseline_score", "candidate_score", "score_delta",
                      "baseline_latency_ms", "candidate_latency_ms", "latency_delta_ms",
                      "baseline_executions", "candidate_executions")


def comparison_row(case: Any) -> dict[str, Any]:
    """One case of a comparison (:class:`assay.analysis.compare.CaseComparison`): its
    status and both runs' figures (scores on the 0-100 scale)."""
    data = case.model_dump(mode="json", exclude={"metric_deltas"})
    data["case_id"] = data.pop("test_case_id")
    return data


__all__ = ["CASE_COLUMNS", "COMPARISON_COLUMNS", "MEDIA_TYPES", "Format", "case_columns",
           "case_row", "chunks", "comparison_row", "csv_cell", "csv_lines", "json_chunks"]
