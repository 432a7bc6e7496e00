"""The calibration gate: a run fails when a judge it relies on is not calibrated, is calibrated
no longer (its prompt, model or schema changed since), or agrees with humans too little.

The judge is identified as the run will use it (:func:`judge_identity`: the requests it would
send, with the run's judge model and any override), so a calibration made with another model
or an older prompt does not count. Every failure says how to calibrate: the command, with the
suite, evaluator, model and store quoted for a shell (a store URL's password is never shown).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from datetime import UTC, datetime

from assay.calibration import store as calibrations
from assay.calibration.agreement import Statistic
from assay.calibration.key import JudgeIdentity, judge_identity
from assay.calibration.report import figure, stat_text
from assay.judges.base import Evaluator
from assay.llm.models import display_model
from assay.store.runs import RunStore
from assay.types.config import CalibrationGate

SUGGESTED_SET = {"pairwise": "llmbar", "ordinal": "roscoe"}


async def calibration_failures(gate: CalibrationGate, evaluators: Sequence[Evaluator],
                               store: RunStore, *, default_model: str | None = None,
                               judge_model: str | None = None,
                               override_model: str | None = None,
                               suite_path: str | None = None) -> list[str]:
    """Why the judges among ``evaluators`` do not meet ``gate`` (none: they do)."""
    failures: list[str] = []
    chosen = _chosen(gate, evaluators, failures)
    for evaluator in chosen:
        identity = await judge_identity(evaluator, default_model=default_model,
                                        judge_model=judge_model, override_model=override_model)
        own = all(m is not None for m in evaluator.models())
        how = _how(gate, evaluator, store, override_model or (None if own else judge_model),
                   suite_path)
        who = _who(evaluator, identity)
        found = calibrations.latest(store, identity.key, gate.set)
        if found is None:
            failures.append(_missing(gate, evaluator, identity, store, who, how))
            continue
        report = found.report
        where = f"calibration {found.id} on {found.set_name}"
        if report.alignment is not None:
            where += (f" (the aligned judge of alignment {report.alignment.id}, measured on "
                      f"{len(report.alignment.held_out)} labels it did not learn from)")
        for name, statistic, minimum in (("kappa", report.kappa, gate.min_kappa),
                                         ("accuracy", report.accuracy, gate.min_accuracy)):
            failure = _below(name, statistic, minimum, who, where)
            if failure is not None:
                failures.append(failure)
    return failures


def _below(name: str, statistic: Statistic | None, minimum: float | None, who: str,
           where: str) -> str | None:
    """Why ``statistic`` fails the gate ``minimum`` (None: it passes, or there is no gate)."""
    if minimum is None:
        return None
    if statistic is None or statistic.value is None:
        reason = statistic.undefined if statistic is not None else \
            "its labels are scores, compared by correlation"
        return (f"{who}: the {where} has no {name} ({reason}); the gate needs "
                f"{name} >= {figure(name, minimum)}")
    if statistic.value < minimum:
        return f"{who}: {name} {stat_text(statistic)} in the {where} is below the gate " \
               f"{figure(name, minimum)}"
    return None


def _chosen(gate: CalibrationGate, evaluators: Sequence[Evaluator],
            failures: list[str]) -> list[Evaluator]:
    if gate.evaluators is None:
        return [e for e in evaluators if e.models()]
    by_name = {e.name: e for e in evaluators}
    chosen = []
    for name in gate.evaluators:
        if name in by_name:
            chosen.append(by_name[name])
        else:
            failures.append(f"the calibration gate names evaluator {name!r}, which the suite "
                            f"does not have (it has: {', '.join(by_name) or 'none'})")
    return chosen


def _who(evaluator: Evaluator, identity: JudgeIdentity) -> str:
    models = ", ".join(identity.models) or "no model"
    return f"judge {evaluator.name!r} ({evaluator.type} on {models})"


def _missing(gate: CalibrationGate, evaluator: Evaluator, identity: JudgeIdentity,
             store: RunStore, who: str, how: str) -> str:
    """No calibration with this key: say whether one exists for an earlier form of the same
    judge (stale) and what changed, or that there is none."""
    earlier = calibrations.find(store, name=evaluator.name, judge_type=evaluator.type,
                                set_name=gate.set, limit=1) or \
        calibrations.find(store, judge_type=evaluator.type, set_name=gate.set, limit=1)
    on = f" on {gate.set}" if gate.set else ""
    note = earlier[0].report.alignment if earlier else None
    if note is not None and note.base_key == identity.key:
        return (f"{who} has no calibration{on} of its own: calibration {earlier[0].id} "
                f"measured the judge aligned from it (alignment {note.id}, key "
                f"{earlier[0].judge_key[:16]}), a different version. Judge with that version "
                f"(assay align --output writes it), or calibrate this one: {how}")
    if earlier:
        old = earlier[0]
        changes = identity.changes_from(old.report.judge) or ["the judge changed"]
        when = "made at an unknown time" if old.created_at is None else \
            datetime.fromtimestamp(old.created_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
        return (f"{who}: its calibration is stale: calibration {old.id}{on} ({when}, "
                f"judge {old.judge_name!r}) was made before {'; '.join(changes)}. "
                f"Calibrate it again: {how}")
    return f"{who} has no calibration{on} in {store.display_url}. Calibrate it: {how}"


def _how(gate: CalibrationGate, evaluator: Evaluator, store: RunStore,
         model: str | None, suite_path: str | None) -> str:
    """The command that calibrates ``evaluator`` as the run uses it (``model``: the judge
    model to give it, when the run chose one), every part quoted for a shell."""
    scale = getattr(evaluator, "calibration_scale", lambda: {"kind": "score"})()
    labelled = gate.set or SUGGESTED_SET.get(str(scale.get("kind")), "SET")
    parts = ["assay", "calibrate", labelled]
    if suite_path:
        parts += ["--suite", suite_path, "--evaluator", evaluator.name]
    else:
        parts += ["--judge", "JUDGE.yaml"]
    if model:
        parts += ["--judge-model", display_model(model)]
    parts += ["--store", store.display_url]
    command = " ".join(shlex.quote(p) if p not in ("SET", "JUDGE.yaml") else p for p in parts)
    if labelled == "SET":
        command += " (SET: a set from 'assay calibrate --list', or your labelled file)"
    if not suite_path:
        command += f" (JUDGE.yaml: the config of evaluator {evaluator.name!r})"
    return command
