"""Comparing two results files (``assay compare before.jsonl after.jsonl``), as
``agentv compare`` does, and AgentV's exit rule beside assay's.

A results file is JSONL rows as ``assay run -o`` (or ``agentv eval``) writes them: each row's
``eval_id`` (and ``repeat``, 0 when absent) identifies the case, ``score`` is its 0-1 score and
``verdict`` its band (derived from the score at 0.8 / 0.6 when a row has none). A row with an
``error`` has no score: it is an error in the comparison, not a 0. The rows become the rows
:func:`assay.compare.compare_rows` compares, so files and stored runs are compared by one rule.

AgentV's summary (the ``agentv`` block of ``--json``, and the ``agentv`` exit rule) is
computed as ``agentv compare`` computes it: every matched row counts at the ``score`` it has
written, an errored row too (AgentV writes an errored case as score 0), so its ``meanDelta``
can differ from assay's ``mean_delta``, which leaves errored cases out; an errored row with no
numeric score (assay writes none) stays out of both. ``total`` is both files' rows, as
AgentV counts it. Every problem names the file and line: invalid JSON, a row that is
not an object, a missing or non-text ``eval_id``, a score that is not a number in [0, 1], and
the same case twice.

Exit rules: ``assay`` (the default) fails on a regression (a loss of at least the threshold,
or a case that passed and no longer does); ``agentv`` fails when the mean score change is
negative, as ``agentv compare`` exits.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from assay.analysis.compare import Comparison, compare_rows
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


@dataclass
class FileComparison(Comparison):
    """A comparison of two results files, with the score changes AgentV averages."""

    agentv_deltas: list[float] = field(default_factory=list)
    """Each matched case's change of written score, errored rows included (see above)."""


def compare_files(before: Path, after: Path, threshold: float = 0.1) -> FileComparison:
    """Compare two results files case by case; files sharing no case are refused."""
    a, b = read_result_rows(before), read_result_rows(after)
    compared = compare_rows(a, b, threshold)
    if not compared.cases:
        raise ConfigError(f"cannot compare {before} with {after}: they share no case",
                          code="incomparable_runs")
    written = {(r["case_id"], r["repeat"]): r["written_score"] for r in b}
    deltas = []
    for row in a:
        after_score = written.get((row["case_id"], row["repeat"]))
        if row["written_score"] is not None and after_score is not None:
            deltas.append(after_score - row["written_score"])
    return FileComparison(**vars(compared), agentv_deltas=deltas)


def agentv_mean_delta(result: Comparison) -> float | None:
    """The mean change as AgentV computes it: over written scores for results files, over
    the scored cases for stored runs (whose errors have no score)."""
    if isinstance(result, FileComparison):
        deltas = result.agentv_deltas
        return sum(deltas) / len(deltas) if deltas else None
    return result.mean_delta


def fails(result: Comparison, rule: ExitRule) -> bool:
    """Whether the comparison fails under ``rule`` (see the module's docstring)."""
    if rule == "agentv":
        mean = agentv_mean_delta(result)
        return mean is not None and round(mean, 3) < 0
    return bool(result.regressions)


def agentv_summary(result: Comparison) -> dict[str, Any]:
    """``agentv compare``'s JSON summary of a comparison."""
    mean = agentv_mean_delta(result)
    if isinstance(result, FileComparison):
        deltas, t = result.agentv_deltas, result.threshold
        wins, losses = sum(d >= t for d in deltas), sum(d <= -t for d in deltas)
        counts = {"wins": wins, "losses": losses, "ties": len(deltas) - wins - losses,
                  "errors": len(result.cases) - len(deltas)}
    else:
        counts = {k + "s" if k != "loss" else "losses": result.count(k)
                  for k in ("win", "loss", "tie", "error")}
    return {"total": 2 * len(result.cases) + len(result.only_before) + len(result.only_after),
            "matched": len(result.cases), **counts,
            "meanDelta": None if mean is None else round(mean, 3),
            "unmatched": {"baseline": len(result.only_before),
                          "candidate": len(result.only_after)}}
