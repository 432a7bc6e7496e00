"""Result files: JSONL rows (AgentV's snake_case shape) and JUnit XML for CI systems.

Every file is written through :mod:`assay.report.outputs`: to a temporary file renamed into
place, so that a reader never sees half a file and a crash leaves the previous one intact.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import TracebackType
from typing import Any
from xml.etree import ElementTree as ET

from assay.report.outputs import AtomicOutput, write_atomic


def _plain(value: Any, seen: frozenset[int] = frozenset()) -> Any:
    """``value`` with what JSON cannot hold replaced: a NaN or infinity by null, a container
    that holds itself by a marker string, a key that is no JSON key by its text."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict | list | tuple):
        if id(value) in seen:
            return "<circular reference>"
        inner = seen | {id(value)}
        if isinstance(value, dict):
            return {k if isinstance(k, str | int | bool) or k is None else str(k):
                    _plain(v, inner) for k, v in value.items()}
        return [_plain(v, inner) for v in value]
    return value


def row_line(row: Any) -> bytes:
    """One JSONL line: strict JSON (no bare NaN), UTF-8 even for a lone surrogate, which is
    written as its ``\\uXXXX`` escape and so reads back as it was."""
    try:
        text = json.dumps(row, ensure_ascii=False, default=str, allow_nan=False)
    except (ValueError, TypeError):  # NaN, a container holding itself, a tuple as a key
        text = json.dumps(_plain(row), ensure_ascii=False, default=str, allow_nan=False)
    return (text + "\n").encode("utf-8", "backslashreplace")


class RowWriter:
    """Appends each case's result row to the JSONL output the moment the case completes.

    The rows go to a temporary file beside the output, renamed over it by :meth:`close` (also
    when the run was interrupted: what finished is kept). So a run killed outright leaves the
    previous file as it was, and a line is either whole in the file or absent. Raises
    :class:`~assay.errors.ConfigError` at once when the output cannot be written, and
    :class:`~assay.report.outputs.OutputWriteError` when a write fails (a full disk).
    """

    def __init__(self, path: Path, label: str = "--output") -> None:
        self._out = AtomicOutput(path, label)
        self.rows = 0

    @property
    def path(self) -> Path:
        return self._out.path

    def write(self, result: Any) -> None:
        row = result.row if hasattr(result, "row") else result
        self._out.write(row_line(row))
        self.rows += 1

    def close(self, keep: bool = True) -> None:
        """Put the rows written in place of the output (``keep``), or drop them and leave the
        previous file as it was."""
        if keep:
            self._out.commit()
        else:
            self._out.discard()

    def __enter__(self) -> RowWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def write_jsonl(path: Path, rows: list[dict[str, Any]], label: str = "output") -> None:
    """One result row per line, the whole file replaced at once."""
    write_atomic(path, b"".join(row_line(row) for row in rows), label)


def write_junit(path: Path, suite_name: str, rows: list[dict[str, Any]],
                run_id: str) -> None:
    """A JUnit report: a test case per (case, repeat). Verdict fail is a failure and error an
    error; borderline passes, as it does the run's gate, with its verdict in system-out."""
    failures = sum(1 for r in rows if r["verdict"] == "fail")
    errors = sum(1 for r in rows if r["verdict"] == "error")
    suite = ET.Element("testsuite", name=suite_name, tests=str(len(rows)),
                       failures=str(failures), errors=str(errors), id=run_id)
    for row in rows:
        name = row["eval_id"] if not row.get("repeat") else f"{row['eval_id']}#{row['repeat']}"
        case = ET.SubElement(suite, "testcase", classname=suite_name, name=name,
                             time=f"{(row.get('latency_ms') or 0) / 1000:.3f}")
        score = "none" if row["score"] is None else f"{row['score']:.3f}"
        if row["verdict"] == "error":
            problems = [f"{e['name']}: {e['error']['message']}" for e in row["evaluator_results"]
                        if e.get("error")]
            el = ET.SubElement(case, "error", message=f"score could not be computed ({score})")
            el.text = "\n".join(problems or [row.get("error", "")])
        elif row["verdict"] == "fail":
            el = ET.SubElement(case, "failure", message=f"{row['verdict']}: score {score}")
            el.text = "\n".join(row.get("misses", [])) or row.get("reasoning", "")
        ET.SubElement(case, "system-out").text = (
            f"verdict {row['verdict']}, score {score}\n{row.get('reasoning', '')}")
    root = ET.Element("testsuites")
    root.append(suite)
    write_atomic(path, ET.tostring(root, encoding="utf-8", xml_declaration=True), "--junit")
