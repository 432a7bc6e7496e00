"""Result files: JSONL rows (AgentV's snake_case shape; or YAML documents, as AgentV's
``--output-format yaml`` writes them) and JUnit XML for CI systems.

Every file is written through :mod:`assay.report.outputs`: to a temporary file renamed into
place, so that a reader never sees half a file and a crash leaves the previous one intact.
Every row (:func:`row_line`, which the YAML form reads too) and every XML text
(:func:`xml_text`) has the known secrets hidden (see :mod:`assay._util.redact`).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from types import TracebackType
from typing import Any
from xml.etree import ElementTree as ET

import orjson

from assay._util.redact import scrub, scrub_json_bytes
from assay.report.outputs import AtomicOutput, write_atomic
from assay.run.display import execution_name, run_display, scale_for
from assay.types import numbers
from assay.types.records import RunSummary


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
    written as its ``\\uXXXX`` escape and so reads back as it was.

    orjson writes the common row (a line per case, so it shows in a cached re-run's profile);
    whatever it refuses (a lone surrogate, a key that is no string, a container holding
    itself, an integer past 64 bits) takes the standard library's path, which handles each.
    Both write a NaN as null, dates and other objects as their text. Known secrets in the
    row's strings are hidden.
    """
    try:
        return scrub_json_bytes(orjson.dumps(row, default=_text, option=_ORJSON_ROW))
    except (orjson.JSONEncodeError, TypeError):
        pass
    try:
        text = json.dumps(row, ensure_ascii=False, default=str, allow_nan=False)
    except (ValueError, TypeError):  # NaN, a container holding itself, a tuple as a key
        text = json.dumps(_plain(row), ensure_ascii=False, default=str, allow_nan=False)
    return scrub_json_bytes((text + "\n").encode("utf-8", "backslashreplace"))


_ORJSON_ROW = (orjson.OPT_APPEND_NEWLINE | orjson.OPT_PASSTHROUGH_DATETIME
               | orjson.OPT_PASSTHROUGH_DATACLASS)
"""Dates and dataclasses go to :func:`_text`, as the standard library's ``default=str``."""


def _text(value: Any) -> Any:
    """What orjson cannot write itself: a float subclass (a NumPy scalar) as its number, as
    the standard library writes it; anything else as its text."""
    return float(value) if isinstance(value, float) else str(value)


ROW_FORMATS = ("jsonl", "yaml")


def row_yaml(row: Any, first: bool) -> bytes:
    """One row as a YAML document (``---`` before it), from the same strict JSON as a JSONL
    line, so both formats hold the same values."""
    from assay._util import yaml_text

    plain = json.loads(row_line(row))
    text = yaml_text.dump(plain, width=float("inf"))
    return (("---\n" if first else "\n---\n") + text).encode("utf-8", "backslashreplace")


class RowWriter:
    """Takes each case's result row for the JSONL output the moment the case completes.

    The rows go to a temporary file beside the output (gathered into blocks on the way),
    renamed over it by :meth:`close` (also when the run was interrupted: what finished is
    kept). So a run killed outright leaves the previous file as it was, and a line is either
    whole in the file or absent. Raises :class:`~assay.errors.ConfigError` at once when the
    output cannot be written, and :class:`~assay.report.outputs.OutputWriteError` when a
    write fails (a full disk), by :meth:`close` at the latest.
    """

    def __init__(self, path: Path, label: str = "--output", fmt: str = "jsonl") -> None:
        if fmt not in ROW_FORMATS:
            from assay.errors import ConfigError

            raise ConfigError(f"output format {fmt!r}: expected one of "
                              f"{', '.join(ROW_FORMATS)}")
        self._out = AtomicOutput(path, label, gather=True)
        self.fmt = fmt
        self.rows = 0

    @property
    def path(self) -> Path:
        return self._out.path

    def write(self, result: Any) -> None:
        row = result.row if hasattr(result, "row") else result
        self._out.write(row_yaml(row, self.rows == 0) if self.fmt == "yaml" else row_line(row))
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


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
"""What XML 1.0 forbids even as a character reference (most C0 controls, lone surrogates,
U+FFFE and U+FFFF), plus DEL and the C1 controls, which it discourages."""


def xml_text(value: Any) -> str:
    """``value`` as text an XML 1.0 document can hold: known secrets hidden, and each
    character XML cannot carry written as its Python escape (``\\x1b``), so ids that differ
    only there stay distinct."""
    text = scrub(value if isinstance(value, str) else str(value))
    return _NOT_XML.sub(
        lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


def _element(parent: ET.Element, tag: str, text: str | None = None,
             **attributes: Any) -> ET.Element:
    """A child element; every attribute and the text pass through :func:`xml_text`."""
    element = ET.SubElement(parent, tag, {k: xml_text(v) for k, v in attributes.items()
                                          if v is not None})
    if text is not None:
        element.text = xml_text(text)
    return element


def _number(value: Any) -> str:
    """An evaluator's 0-1 score or threshold as :mod:`assay.types.numbers` shows it."""
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return numbers.score(value)
    return str(value)


def _seconds(row: dict[str, Any]) -> float:
    """A case's time as JUnit's ``time`` attribute holds it: seconds, a number CI systems
    read (JUnit's format, not a figure for people: :mod:`assay.types.numbers` shows those)."""
    value = row.get("latency_ms")
    return value / 1000 if isinstance(value, int | float) and value > 0 else 0.0


def _junit_timestamp(value: Any) -> str | None:
    """JUnit's timestamp: ISO 8601 local form without a zone (the rows' are UTC)."""
    if not value:
        return None
    return str(value).removesuffix("Z")


def _evaluator_errors(row: dict[str, Any]) -> list[str]:
    """Each evaluator that could not score, with its error code and message."""
    lines = []
    for e in row.get("evaluator_results") or []:
        error = e.get("error")
        if error:
            code, message = ((error.get("code"), error.get("message"))
                             if isinstance(error, dict) else ("error", error))
            lines.append(f"{e.get('name')} [{code}]: {message}")
    if not lines and row.get("verdict") == "error":
        lines = [f"no score could be computed: {row.get('error') or 'no evaluator gave one'}"]
    return lines


def _evaluator_failures(row: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, description) of each evaluator that did not pass: its score, threshold (when
    the row holds it), rationale and its own misses."""
    found = []
    for e in row.get("evaluator_results") or []:
        if e.get("error") or (e.get("passed") is not False and e.get("verdict") != "fail"):
            continue
        name = str(e.get("name"))
        line = f"{name}: score {_number(e.get('score'))}"
        if e.get("threshold") is not None:
            line += f", threshold {_number(e['threshold'])}"
        if e.get("reasoning"):
            line += f": {e['reasoning']}"
        found.append((name, line + "".join(f"\n  miss: {m}" for m in e.get("misses") or [])))
    return found


def _skip_reasons(row: dict[str, Any]) -> list[str]:
    """Why no evaluator applied to a skipped case: each evaluator's reason."""
    return [f"{e.get('name')}: {e.get('skipped')}" for e in row.get("evaluator_results") or []
            if e.get("skipped")] or ["no evaluator applied"]


def junit_errors(rows: list[dict[str, Any]], errored: set[int]) -> str:
    """What the suite's ``errors`` count, in words (its ``assay.junit_errors`` property):
    JUnit has no place for a case that passed while one of its evaluators could not score,
    and an error is never a pass, so each execution an evaluator could not score is an
    ``<error>`` whatever its verdict. Its verdicts are counted, so that JUnit's ``errors``
    beside the run's verdict count of ``error`` is explained, not a second answer."""
    by_verdict: dict[str, int] = {}
    for row in rows:
        if id(row) in errored:
            verdict = str(row.get("verdict"))
            by_verdict[verdict] = by_verdict.get(verdict, 0) + 1
    verdicts = ", ".join(f"{numbers.count(n)} {v}" for v, n in sorted(by_verdict.items()))
    return (f"{numbers.count_of(len(errored), 'execution')} an evaluator could not score, "
            f"whatever its verdict{f' (verdicts: {verdicts})' if verdicts else ''}")


def _properties(suite: ET.Element, summary: RunSummary, errors: str) -> None:
    """The run's figures as the suite's ``<properties>``, shown as every surface shows them
    (:func:`assay.run.display.run_display`), and what its ``errors`` count (``errors``,
    :func:`junit_errors`); a figure the run has none of is left out."""
    shown = run_display(summary).model_dump()
    evaluators, measured = shown.pop("evaluators"), shown.pop("measured")
    counts, dataset = shown.pop("evaluator_counts"), shown.pop("dataset_metrics")
    found = [(f"assay.{key}", value) for key, value in shown.items()]
    found += [(f"assay.evaluator.{name}.mean", value) for name, value in evaluators.items()]
    found += [(f"assay.evaluator.{name}.counts", value) for name, value in counts.items()]
    found += [(f"assay.evaluator.{name}.measured", value) for name, value in measured.items()]
    found += [(f"assay.dataset_metric.{name}", value) for name, value in dataset.items()]
    found.append(("assay.junit_errors", errors))
    properties = _element(suite, "properties")
    for name, value in found:
        if value != numbers.MISSING:
            _element(properties, "property", name=name, value=value)


def write_junit(path: Path, suite_name: str, rows: list[dict[str, Any]],
                run_id: str, timestamp: str | None = None,
                summary: RunSummary | None = None) -> None:
    """A JUnit report: a test case per (case, repeat).

    A case in which any evaluator could not score is an ``<error>`` naming each such
    evaluator with its error code and message (an error is never a pass); otherwise a case
    whose verdict is fail is a ``<failure>`` naming the evaluators that failed, with their
    score, threshold and rationale, and one whose verdict is skipped (no evaluator applied)
    is ``<skipped>`` with their reasons: neither a pass nor an error, as every surface counts
    it. Borderline passes, as it does the run's gate, with its verdict in system-out. Cases
    carry their time, timestamp and, when the row knows them, the ``file`` and ``line`` they
    were defined at. With the run's ``summary``, the suite's
    ``<properties>`` hold its figures (pass rate, mean score, latency, cost, dimensions), and
    case scores are on its policy's scale, as every surface shows them. Every piece of text is
    made safe for XML 1.0, so that no case id or judge answer can break the document.
    """
    scale = scale_for(summary)
    errors = {id(r): _evaluator_errors(r) for r in rows}
    failed = {id(r): r.get("verdict") == "fail" and not errors[id(r)] for r in rows}
    skipped = {id(r) for r in rows if r.get("verdict") == "skipped" and not errors[id(r)]}
    stamps = [str(r["timestamp"]) for r in rows if r.get("timestamp")]
    root = ET.Element("testsuites")
    suite = _element(
        root, "testsuite", name=suite_name, tests=len(rows),
        failures=sum(failed.values()), errors=sum(1 for v in errors.values() if v),
        skipped=len(skipped), time=f"{sum(_seconds(r) for r in rows):.3f}",
        timestamp=_junit_timestamp(timestamp or (min(stamps) if stamps else None)), id=run_id)
    if summary is not None:
        _properties(suite, summary, junit_errors(rows, {k for k, v in errors.items() if v}))
    for row in rows:
        name = execution_name(row["eval_id"], row.get("repeat") or 0)
        case = _element(suite, "testcase", classname=suite_name, name=name,
                        time=f"{_seconds(row):.3f}",
                        timestamp=_junit_timestamp(row.get("timestamp")),
                        file=row.get("file"), line=row.get("line"))
        score = scale.shown(row.get("score"))
        failing = _evaluator_failures(row)
        if errors[id(row)]:
            problems = errors[id(row)]
            _element(case, "error",
                     "\n".join(problems + [f"also failed: {line}" for _, line in failing]),
                     message=f"{len(problems)} evaluator error(s): {problems[0]}"[:500],
                     type="evaluator_error")
        elif failed[id(row)]:
            names = ", ".join(name for name, _ in failing) or "no single evaluator"
            _element(case, "failure",
                     "\n".join(line for _, line in failing)
                     or f"the case score {score} is below the pass band",
                     message=f"failed: {names} (case score {score})"[:500], type="fail")
        elif id(row) in skipped:
            reasons = _skip_reasons(row)
            _element(case, "skipped", "\n".join(reasons),
                     message=f"not applicable: {reasons[0]}"[:500])
        _element(case, "system-out",
                 f"verdict {row.get('verdict')}, score {score}\n{row.get('reasoning') or ''}")
    write_atomic(path, ET.tostring(root, encoding="utf-8", xml_declaration=True), "--junit")
