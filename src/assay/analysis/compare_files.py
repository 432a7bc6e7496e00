"""Comparing two results files (``assay compare before.jsonl after.jsonl``), as
``agentv compare`` does, and AgentV's exit rule beside assay's.

A results file is JSONL rows as ``assay run -o`` (or ``agentv eval``) writes them: each row's
``eval_id`` (and ``repeat``, 0 when absent) identifies the case, ``score`` is its 0-1 score and
``verdict`` its band (derived from the score at 0.8 / 0.6 when a row has none). A row with an
``error`` has no score: it is an error in the comparison, not a 0. The rows become case
records that :func:`assay.analysis.compare.compare_records` compares with the default policy,
so files and stored runs are compared by one engine and one rule.

AgentV's summary (the ``agentv`` block of ``--json``, and the ``agentv`` exit rule) is
computed as ``agentv compare`` computes it: every matched row counts at the ``score`` it has
written, an errored row too (AgentV writes an errored case as score 0), so its ``meanDelta``
can differ from assay's ``mean_delta``, which leaves errored cases out; an errored row with no
numeric score (assay writes none) stays out of both. ``total`` is both files' rows, as
AgentV counts it. Every problem names the file and line: invalid JSON, a row that is
not an object, a missing or non-text ``eval_id``, a score that is not a number in [0, 1], and
the same case twice.

Exit rules: ``assay`` (the default) is the comparison's own exit code (a regression of the
runs' figures); ``agentv`` fails when the mean score change is negative, as ``agentv compare``
exits.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from assay._util import jsondata
from assay._util.jsonlines import json_lines
from assay.analysis.compare import CompareOptions, Comparison, compare_records
from assay.errors import ConfigError
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.records import CaseRecord, RunRecord, RunStatus, Verdict
from assay.types.verdict import band

ExitRule = Literal["assay", "agentv"]
AGENTV_THRESHOLD = 0.1
"""``agentv compare``'s default: a score change of at least this is a win or a loss."""


def _band(score: float | None) -> str:
    return band(score).value


def read_result_rows(path: Path) -> list[dict[str, Any]]:
    """The compare rows (``case_id``, ``repeat``, ``score``, ``verdict``) of a results file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file", code="missing_results") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}", code="invalid_results") from None
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, int], int] = {}
    for number, line in json_lines(text):
        where = f"{path}:{number}"
        try:
            row = jsondata.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where}:{exc.colno}: invalid JSON: {exc.msg}",
                              code="invalid_results") from None
        if not isinstance(row, dict):
            raise ConfigError(f"{where}: a result row is a JSON object", code="invalid_results")
        case = row.get("eval_id", row.get("case_id"))
        if not isinstance(case, str) or not case:
            raise ConfigError(f"{where}: the row has no eval_id (expected the case's id as "
                              "text)", code="invalid_results")
        repeat = row.get("repeat", 0)
        if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 0:
            raise ConfigError(f"{where}: repeat {repeat!r} is not a whole number >= 0",
                              code="invalid_results")
        written = row.get("score")
        if written is not None and (isinstance(written, bool) or not isinstance(
                written, int | float) or not math.isfinite(written) or not 0 <= written <= 1):
            raise ConfigError(f"{where}: score {written!r} is not a number from 0 to 1",
                              code="invalid_results")
        score = None if row.get("error") else written
        key = (case, repeat)
        if key in seen:
            raise ConfigError(f"{where}: case {case!r} (repeat {repeat}) is also at line "
                              f"{seen[key]}", code="invalid_results")
        seen[key] = number
        verdict = row.get("verdict")
        rows.append({"case_id": case, "repeat": repeat,
                     "score": None if score is None else float(score),
                     "written_score": None if written is None else float(written),
                     "verdict": verdict if isinstance(verdict, str) else _band(score)})
    if not rows:
        raise ConfigError(f"{path}: no result rows", code="invalid_results")
    return rows


class FileComparison(Comparison):
    """A comparison of two results files, with the score changes AgentV averages."""

    agentv_deltas: list[float] = Field(
        default_factory=list, description="each matched case's change of written score, "
        "errored rows included (see the module docstring)")


def _records(path: Path, rows: list[dict[str, Any]]) -> list[CaseRecord]:
    """A results file's rows as the case records of a run (no inputs or outputs kept)."""
    found = []
    for row in rows:
        try:
            verdict = Verdict(row["verdict"])
        except ValueError:
            verdict = Verdict(_band(row["score"]))
        if row["score"] is None:
            verdict = Verdict.ERROR
        found.append(CaseRecord(run_id=str(path), case_id=row["case_id"], repeat=row["repeat"],
                                case=Case(id=row["case_id"], input=""), execution=Execution(),
                                score=row["score"], verdict=verdict))
    return found


def compare_files(before: Path, after: Path,
                  options: CompareOptions | None = None) -> FileComparison:
    """Compare two results files by the one engine (the default policy); files sharing no
    case, or holding different cases unless allowed, are refused."""
    a, b = read_result_rows(before), read_result_rows(after)
    runs = [RunRecord(id=str(path), suite=path.name, status=RunStatus.COMPLETED, created_at=0)
            for path in (before, after)]
    compared = compare_records(runs[0], runs[1], _records(before, a), _records(after, b),
                               options)
    written = {(r["case_id"], r["repeat"]): r["written_score"] for r in b}
    deltas = []
    for row in a:
        after_score = written.get((row["case_id"], row["repeat"]))
        if row["written_score"] is not None and after_score is not None:
            deltas.append(after_score - row["written_score"])
    return FileComparison(**dict(compared), agentv_deltas=deltas)


def _agentv_deltas(result: Comparison) -> list[float]:
    """The changes AgentV averages: written scores for results files, else the 0-1 change
    of each matched case that has a score on both sides."""
    if isinstance(result, FileComparison):
        return result.agentv_deltas
    return [c.score_delta / 100 for c in result.test_case_comparisons
            if c.score_delta is not None]


def agentv_mean_delta(result: Comparison) -> float | None:
    """The mean change as AgentV computes it."""
    deltas = _agentv_deltas(result)
    return sum(deltas) / len(deltas) if deltas else None


def fails(result: Comparison, rule: ExitRule, fail_on_thresholds: bool = True) -> bool:
    """Whether the comparison fails under ``rule`` (see the module's docstring)."""
    if rule == "agentv":
        mean = agentv_mean_delta(result)
        return mean is not None and round(mean, 3) < 0
    return result.exit_code(fail_on_thresholds) != 0


def agentv_summary(result: Comparison, threshold: float = AGENTV_THRESHOLD) -> dict[str, Any]:
    """``agentv compare``'s JSON summary of a comparison."""
    deltas = _agentv_deltas(result)
    mean = agentv_mean_delta(result)
    matched = len(result.test_case_comparisons)
    wins, losses = sum(d >= threshold for d in deltas), sum(d <= -threshold for d in deltas)
    only_before, only_after = (len(result.baseline_only_test_cases),
                               len(result.candidate_only_test_cases))
    return {"total": 2 * matched + only_before + only_after, "matched": matched,
            "wins": wins, "losses": losses, "ties": len(deltas) - wins - losses,
            "errors": matched - len(deltas),
            "meanDelta": None if mean is None else round(mean, 3),
            "unmatched": {"baseline": only_before, "candidate": only_after}}
