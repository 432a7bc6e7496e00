"""Comparing two results files (``assay compare before.jsonl after.jsonl``), as
``agentv compare`` does, and AgentV's exit rule beside assay's.

A results file is JSONL rows as ``assay run -o`` (or ``agentv eval``) writes them: each row's
``eval_id`` (and ``repeat``, 0 when absent) identifies the case, ``score`` is its 0-1 score and
``verdict`` its band (derived from the score at 0.8 / 0.6 when a row has none). A row with an
``error`` has no score: it is an error in the comparison, not a 0 (AgentV counts it as 0).
The rows become the rows :func:`assay.compare.compare_rows` compares, so files and stored runs
are compared by one rule. Every problem names the file and line: invalid JSON, a row that is
not an object, a missing or non-text ``eval_id``, a score that is not a number in [0, 1], and
the same case twice.

Exit rules: ``assay`` (the default) fails on a regression (a loss of at least the threshold,
or a case that passed and no longer does); ``agentv`` fails when the mean score change is
negative, as ``agentv compare`` exits.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

from assay.compare import Comparison, compare_rows
from assay.errors import ConfigError

ExitRule = Literal["assay", "agentv"]


def _band(score: float | None) -> str:
    if score is None:
        return "error"
    return "pass" if score >= 0.8 else "borderline" if score >= 0.6 else "fail"


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
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
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
        score = row.get("score")
        if row.get("error"):
            score = None
        elif score is not None and (isinstance(score, bool) or not isinstance(
                score, int | float) or not math.isfinite(score) or not 0 <= score <= 1):
            raise ConfigError(f"{where}: score {score!r} is not a number from 0 to 1",
                              code="invalid_results")
        key = (case, repeat)
        if key in seen:
            raise ConfigError(f"{where}: case {case!r} (repeat {repeat}) is also at line "
                              f"{seen[key]}", code="invalid_results")
        seen[key] = number
        verdict = row.get("verdict")
        rows.append({"case_id": case, "repeat": repeat,
                     "score": None if score is None else float(score),
                     "verdict": verdict if isinstance(verdict, str) else _band(score)})
    if not rows:
        raise ConfigError(f"{path}: no result rows", code="invalid_results")
    return rows


def compare_files(before: Path, after: Path, threshold: float = 0.1) -> Comparison:
    """Compare two results files case by case; files sharing no case are refused."""
    a, b = read_result_rows(before), read_result_rows(after)
    result = compare_rows(a, b, threshold)
    if not result.cases:
        raise ConfigError(f"cannot compare {before} with {after}: they share no case",
                          code="incomparable_runs")
    return result


def fails(result: Comparison, rule: ExitRule) -> bool:
    """Whether the comparison fails under ``rule`` (see the module's docstring)."""
    if rule == "agentv":
        mean = result.mean_delta
        return mean is not None and round(mean, 3) < 0
    return bool(result.regressions)


def agentv_summary(result: Comparison) -> dict[str, Any]:
    """``agentv compare``'s JSON summary of a comparison."""
    mean = result.mean_delta
    return {"total": len(result.cases) + len(result.only_before) + len(result.only_after),
            "matched": len(result.cases), "wins": result.count("win"),
            "losses": result.count("loss"), "ties": result.count("tie"),
            "errors": result.count("error"),
            "meanDelta": None if mean is None else round(mean, 3),
            "unmatched": {"baseline": len(result.only_before),
                          "candidate": len(result.only_after)}}
