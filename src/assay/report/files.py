"""Result files: JSONL rows (AgentV's snake_case shape) and JUnit XML for CI systems."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET


class RowWriter:
    """Appends each case's result row to a JSONL file the moment the case completes, so a
    stopped run's file holds everything that finished (AgentV writes its results the same way).
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("w", encoding="utf-8")

    def write(self, result: Any) -> None:
        row = result.row if hasattr(result, "row") else result
        self._file.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """One result row per line; written whole to a temp file then renamed, so a reader never
    sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    tmp.replace(path)


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
    path.parent.mkdir(parents=True, exist_ok=True)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
