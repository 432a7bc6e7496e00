"""Calibration as a library call: :func:`calibrate` measures how far a judge agrees with humans.

A calibration is a run like any other: the labelled items become a suite whose cases carry
the outputs to judge (never the human labels: no judge can see them), the judge is the suite's
one evaluator, and :func:`assay.evaluate_async` runs it, so the judge calls are cached,
concurrent and stored, and a stopped calibration resumes (``resume=RUN_ID``) without asking
again what was answered. The statistics are then computed over the stored records against the
labels (:mod:`assay.calibration.analysis`), and the report is stored in the run store under
the judge's key, where the calibration gate of later runs finds it.

Everything that can be wrong with the data or the judge is found before the first call:
unknown labels, records lacking what the judge reads, a judge whose scale does not match the
labels (:mod:`assay.calibration.fit`).

A stored run can be calibrated too, without judging again: ``calibrate(run=RUN_ID,
labels="labels.csv")`` compares the run's scores with human labels given by case id.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay._util.user_paths import user_path
from assay.calibration import store as calibrations
from assay.calibration.agreement import numpy
from assay.calibration.analysis import Judged, analyse
from assay.calibration.files import load_labelled, rows_of
from assay.calibration.fit import check_fit, judge_scale
from assay.calibration.items import (
    CalibrationDataError,
    Kind,
    LabelledItem,
    LabelledSet,
    Where,
    infer_kind,
    normal_label,
    refuse_duplicate_ids,
)
from assay.calibration.key import JudgeIdentity, judge_identity
from assay.calibration.report import CalibrationReport
from assay.calibration.sets import SETS, load_set
from assay.errors import ConfigError
from assay.judges.base import Evaluator
from assay.judges.registry import build
from assay.llm.build import build_engine
from assay.llm.engine import JudgeEngine
from assay.llm.models import is_demo_model, judge_notes
from assay.run.evaluate import (
    EvaluatorLike,
    OnInputs,
    StoreLike,
    as_evaluator,
    evaluate_async,
    open_store,
    suite_judge,
)
from assay.run.evaluate import load_data as load_suite
from assay.run.evaluate import resume_async as resume_run
from assay.run.runner import Progress
from assay.run.sync import run_sync
from assay.store.runs import RunStore
from assay.suites.model import Suite, SuiteCase
from assay.types.case import Case
from assay.types.config import Gates, RunConfig, settings_error
from assay.types.engine_config import CacheMode, RetryPolicy
from assay.types.execution import Execution
from assay.types.records import CaseRecord, RunRecord
from assay.types.score import Score

NEAR_CHANCE = ("the embedded 270M model is a demo, not a judge: expect agreement near chance "
               "(accuracy near the share of the commonest label, kappa near 0)")


def calibrate(data: Any = None, **kwargs: Any) -> CalibrationReport:
    """Calibrate a judge against human labels. See :func:`calibrate_async`."""
    return run_sync(calibrate_async(data, **kwargs))


async def calibrate_async(
        data: Any = None, *, judge: EvaluatorLike | None = None,
        judge_model: str | None = None, store: StoreLike = None,
        metric: str | None = None, limit: int | None = None, kind: Kind | None = None,
        label: str = "label", scale: Any = None, columns: Mapping[str, str] | None = None,
        run: str | None = None, labels: str | Path | None = None,
        evaluator: str | None = None, suite: str | Path | Suite | None = None,
        concurrency: int = 8, cache: CacheMode | None = None,
        retry: RetryPolicy | None = None, resume: str | None = None,
        resamples: int = 1000, level: float = 0.95, seed: int = 0,
        engine: JudgeEngine | None = None, progress: Progress | None = None,
        save: bool = True, on_inputs: OnInputs | None = None) -> CalibrationReport:
    """Run ``judge`` over human-labelled ``data`` and report how far it agrees.

    Args:
        data: a built-in set name (``assay calibrate --list``), a labelled ``.jsonl``,
            ``.json`` or ``.csv`` file, a list of dicts or a DataFrame (see
            :mod:`assay.calibration.files`). Not used with ``run``.
        judge: the evaluator to calibrate: an instance, a type name or a config dict;
            None: the set's default judge (or, with ``suite``, the suite's evaluator).
        judge_model: the judge model, overriding the evaluator's own (as ``--judge-model``).
        store: where the calibration run and its report are stored (the default run store,
            so that the calibration gate of later runs finds it).
        metric: which human rating of a set that offers several (Newsroom's ``Coherence``).
        limit: judge only the first N items.
        kind, label, scale, columns: how to read a user's file (see ``files``).
        run, labels, evaluator: calibrate the scores of stored run ``run`` (its evaluator
            named ``evaluator``; the only judge when None) against ``labels``, a file of
            ``case_id`` and ``label`` columns, or without ``labels`` against the labels
            people gave the run's scores (:mod:`assay.store.labels`). No judge is called.
        suite, evaluator: calibrate evaluator ``evaluator`` of ``suite`` (a suite file or a
            loaded Suite) as a run of the suite uses it: with the judge model the suite's
            targets give it (:func:`assay.run.evaluate.suite_judge`), so the calibration gate
            of the suite's runs finds this calibration.
        resume: finish a stopped calibration run by id (same data and judge).
        resamples, level, seed: the bootstrap (resamples 0: no intervals).
        save: store the report (False: compute it only).
        on_inputs: called with every file the calibration uses (the labelled data or the
            labels, the store, the cache...) before any judge is called; see
            :data:`assay.run.evaluate.OnInputs`.
    """
    numpy()  # statistics need the stats extra: say so before anything runs
    run_store = open_store(store)
    if isinstance(labels, str | Path):
        labels = user_path(labels)
    own = _own_files(data, labels)
    if run is not None:
        if on_inputs is not None:
            on_inputs({**run_store.input_files(), **own})
        if suite is not None or judge is not None:
            raise ConfigError("run= calibrates the scores a stored run already has: its judge "
                              "is the run's, so judge= and suite= do not go with it")
        return await _calibrate_run(run_store, run, labels, evaluator, kind, label, scale,
                                    resamples, level, seed, save)
    if labels is not None:
        raise ConfigError("labels= goes with run= (a stored run to calibrate)")
    suite_judge_model: str | None = None
    if suite is not None:
        if judge is not None:
            raise ConfigError("give the judge with judge= (--judge) or with suite= (--suite), "
                              "not both")
        judge, suite_judge_model, suite_files = suite_evaluator(
            suite, evaluator, resolve_judge=judge_model is None)
        own.update(suite_files)
    elif evaluator is not None:
        raise ConfigError("evaluator= goes with suite= (--suite) or run= (--run)")
    labelled = load_data(data, metric=metric, limit=limit, kind=kind, label=label,
                         scale=scale, columns=columns)
    chosen = judge if judge is not None else labelled.default_judge
    if chosen is None:
        raise ConfigError(f"{labelled.name}: give the judge to calibrate (judge=, or --judge "
                          "FILE): this data has no default judge")
    built = as_evaluator(chosen, "judge")
    labelled, dropped = not_learned(labelled, built)
    check_fit(labelled, built)
    config = calibration_config(concurrency, judge_model, cache, retry)
    own_engine = engine is None
    if engine is None:
        engine = build_engine(config)
    try:
        identity = await judge_identity(built, default_model=engine.config.default_model,
                                        judge_model=suite_judge_model,
                                        override_model=judge_model)
        hook = None if on_inputs is None else _adding(on_inputs, own)
        if resume is not None:
            result = await resume_run(resume, store=run_store, data=calibration_suite(
                labelled, built, suite_judge_model), progress=progress,
                judge_model=judge_model, concurrency=concurrency, on_inputs=hook)
            by_id = {r.case_id: r for r in result.records if r.repeat == 0}
            judged: list[Judged] = [(item, _score_of(by_id.get(item.id), built.name))
                                    for item in labelled.items]
            run_id = result.run_id
        else:
            judged, run_id = await judge_labelled(
                labelled, built, config=config, engine=engine, store=run_store,
                progress=progress, judge_model=suite_judge_model, on_inputs=hook)
    finally:
        if own_engine:
            await engine.aclose()
    report = analyse(labelled, judged, identity, passes=passes_of(built),
                     report_id=new_calibration_id(), run_id=run_id,
                     resamples=resamples, level=level, seed=seed)
    demo_notes(report, identity)
    if dropped:
        report.notes.append(f"{dropped} item(s) the aligned judge learned from were left out "
                            "(it is measured only on labels it never saw)")
    if save:
        calibrations.save(run_store, report)
    return report


def calibration_config(concurrency: int, judge_model: str | None, cache: CacheMode | None,
                       retry: RetryPolicy | None) -> RunConfig:
    """The config of a calibration run: no gate of its own (its figures are the result)."""
    try:
        return RunConfig(concurrency=concurrency, judge_model=judge_model, cache=cache,
                         retry=retry or RetryPolicy(),
                         gates=Gates(max_failed=None, max_errors=None))
    except ValidationError as exc:
        raise settings_error(exc) from None


def not_learned(labelled: LabelledSet, judge: Evaluator) -> tuple[LabelledSet, int]:
    """``labelled`` without the items an aligned ``judge`` learned from (see
    :func:`assay.calibration.alignment.without_learned`), and how many were dropped."""
    aligned = getattr(judge, "aligned", None)
    if aligned is None or not aligned.learned_ids:
        return labelled, 0
    from assay.calibration.alignment import without_learned

    return without_learned(labelled, aligned.learned_ids)


async def judge_labelled(labelled: LabelledSet, judge: Evaluator, *, config: RunConfig,
                         engine: JudgeEngine, store: RunStore, progress: Progress | None = None,
                         judge_model: str | None = None,
                         on_inputs: OnInputs | None = None) -> tuple[list[Judged], str]:
    """``judge``'s score of every labelled item (None where it has none), by one run of the
    items as a suite (:func:`calibration_suite`), and the run's id."""
    items = calibration_suite(labelled, judge, judge_model)
    result = await evaluate_async(items, config=config, store=store, engine=engine,
                                  progress=progress, on_inputs=on_inputs)
    by_id = {r.case_id: r for r in result.records if r.repeat == 0}
    return [(item, _score_of(by_id.get(item.id), judge.name)) for item in labelled.items], \
        result.run_id


def _own_files(data: Any, labels: Path | None) -> dict[Path, str]:
    """The user's files a calibration reads: the labelled data, or a run's labels."""
    found: dict[Path, str] = {}
    if isinstance(data, str | Path) and not (isinstance(data, str) and data in SETS):
        found[user_path(data)] = "the labelled data"
    if labels is not None:
        found[labels] = "the labels file"
    return found


def _adding(on_inputs: OnInputs, own: dict[Path, str]) -> OnInputs:
    """``on_inputs`` told of ``own`` files too."""
    def told(found: dict[Path, str]) -> None:
        on_inputs({**found, **own})
    return told


def load_data(data: Any, *, metric: str | None = None, limit: int | None = None,
              kind: Kind | None = None, label: str = "label", scale: Any = None,
              columns: Mapping[str, str] | None = None) -> LabelledSet:
    """A built-in set by name, or a user's labelled data."""
    if data is None:
        raise ConfigError("no labelled data: give a set name (assay calibrate --list) or a "
                          "labelled .jsonl/.json/.csv file")
    if isinstance(data, str) and data in SETS:
        if kind is not None or scale is not None or columns:
            raise ConfigError(f"set {data!r} has its own kind and columns; kind=, scale= and "
                              "columns= are for your own files")
        return load_set(data, metric=metric, limit=limit)
    if metric is not None:
        raise ConfigError("metric= picks a rating of a built-in set; your file's label column "
                          "is label=")
    if isinstance(data, str) and not user_path(data).exists() and "/" not in data and \
            "." not in data:
        raise CalibrationDataError(f"unknown calibration set {data!r}; known: "
                                   f"{', '.join(SETS)} (or give a labelled file)")
    if isinstance(data, str | Path):
        data = user_path(data)
    return load_labelled(data, kind=kind, label=label, scale=scale, columns=columns,
                         limit=limit)


def suite_evaluator(suite: str | Path | Suite, name: str | None, *, resolve_judge: bool = True
                    ) -> tuple[Evaluator, str | None, dict[Path, str]]:
    """Evaluator ``name`` of ``suite``, the judge model a run of the suite gives it (None:
    the engine's default), resolved as every run resolves it (not with ``resolve_judge``
    False: a judge model given to the calibration replaces it anyway), and the files the
    suite was read from."""
    if name is None:
        raise ConfigError("suite= needs evaluator=: the evaluator to calibrate (--evaluator "
                          "NAME)")
    loaded = load_suite(user_path(suite) if isinstance(suite, str | Path) else suite)
    found = {e.name: e for e in loaded.evaluators}
    if name not in found:
        raise ConfigError(f"{loaded.source or loaded.name}: no evaluator {name!r} among the "
                          f"suite's own ({', '.join(found) or 'none'})")
    return found[name], suite_judge(loaded) if resolve_judge else None, loaded.input_files()


def calibration_suite(labelled: LabelledSet, judge: Evaluator,
                      judge_model: str | None = None) -> Suite:
    """The labelled items as a suite judged by ``judge`` (on ``judge_model`` where it names
    no model of its own, as a suite's run would judge it): each case holds the input, the
    output to judge (and for pairs the second output where the judge reads it), reference,
    context and guidelines, but never the human label."""
    baseline = _baseline(judge) if labelled.kind == "pairwise" else None
    cases = []
    for item in labelled.items:
        metadata: dict[str, Any] = {"calibration_set": labelled.name}
        if item.group is not None:
            metadata["group"] = item.group
        expected = item.reference
        if baseline == "expected_output":
            expected = item.output_2
        elif baseline is not None:
            metadata[baseline.removeprefix("metadata.")] = item.output_2
        case = Case(id=item.id, input=item.input, expected_output=expected,
                    reference_context=item.context, guidelines=item.guidelines,
                    metadata=metadata)
        cases.append(SuiteCase(case=case, execution=Execution(input=item.input,
                                                              output=item.output)))
    return Suite(name=f"calibrate:{labelled.name}", cases=cases, evaluators=[judge],
                 judge_target=judge_model, metadata={"calibration_set": labelled.name})


def new_calibration_id() -> str:
    return "cal-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def _baseline(judge: Evaluator) -> str:
    """Where a pairwise judge (or a jury of them) reads the second output."""
    members = getattr(judge, "members", None)
    found = {str(getattr(m, "baseline", "expected_output")) for m in members} \
        if isinstance(members, list) else {str(getattr(judge, "baseline", "expected_output"))}
    if len(found) != 1:
        raise ConfigError(f"the judges of {judge.name!r} read the second output from different "
                          f"places ({', '.join(sorted(found))}); give them one baseline")
    return found.pop()


def _score_of(record: CaseRecord | None, name: str) -> Score | None:
    return record.score_named(name) if record is not None else None


def passes_of(judge: Evaluator) -> Any:
    def passes(score: Score) -> bool:
        if score.passed is not None:
            return score.passed
        return score.value is not None and judge.verdict(score.value)
    return passes


def demo_notes(report: CalibrationReport, identity: JudgeIdentity) -> None:
    """The notes on the calibrated judge's models first (a demo or fake model is no real
    judge), and what to expect of the demo model's agreement."""
    notes = judge_notes(identity.models)
    if any(is_demo_model(m) for m in identity.models):
        notes.append(NEAR_CHANCE)
    report.notes[:0] = notes


def run_judge(stored: RunRecord, evaluator: str | None) -> Evaluator:
    """The judge evaluator ``evaluator`` of a stored run, rebuilt from its recorded spec
    (None: its one evaluator that asks a model)."""
    specs = {e.name: e for e in stored.config.evaluators}
    if evaluator is None:
        judges = [e for e in specs.values() if build({"type": e.type, **e.params}).models()]
        if len(judges) != 1:
            raise ConfigError(f"run {stored.id} has {len(judges)} judge evaluators "
                              f"({', '.join(e.name for e in judges) or 'none'}); name one with "
                              "evaluator=")
        spec = judges[0]
    elif evaluator in specs:
        spec = specs[evaluator]
    else:
        raise ConfigError(f"run {stored.id} has no evaluator {evaluator!r}; it has: "
                          f"{', '.join(specs) or 'none'}")
    return build({"type": spec.type, "name": spec.name, **spec.params},
                 f"evaluator {spec.name!r}")


def labelled_cases(run_store: RunStore, run_id: str, evaluator: str) -> list[dict[str, Any]]:
    """The cases of a run that people labelled (the latest label of each) as rows of a labels
    file: the case's input, the agent's output, the expected output as the reference, and
    what the reviewer says the verdict should be."""
    _, rows = _stored_labels(run_store, run_id, evaluator, "label")
    records = {r.case_id: r for r in run_store.case_records(run_id) if r.repeat == 0}
    out = []
    for _, row in rows:
        record = records.get(row["case_id"])
        if record is None:
            continue
        value = row["label"]
        out.append({"id": record.case_id, "input": record.case.input,
                    "output": record.execution.output if record.execution else None,
                    "reference": record.case.expected_output,
                    "label": ("pass" if value else "fail") if isinstance(value, bool)
                    else value})
    return out


def _stored_labels(run_store: RunStore, run_id: str, evaluator: str,
                   label: str) -> tuple[str, list[tuple[Where, dict[str, Any]]]]:
    """The labels people gave the evaluator's scores in the run (the viewer's case pages,
    ``POST /runs/{id}/labels``), the latest of each, as rows of a labels file would be."""
    from assay.store.labels import current_labels, human_value

    source = f"the human labels of run {run_id} ({evaluator})"
    found = [label_ for label_ in current_labels(run_store, run_id, evaluator)
             if label_.repeat == 0 and human_value(label_) is not None]
    if not found:
        raise ConfigError(f"run {run_id} has no human labels of {evaluator!r}: label its "
                          "cases on their pages in assay serve (or POST /runs/{id}/labels), "
                          "or give labels= a file of case_id and label columns",
                          code="no_labels")
    return source, [(Where(source, record=i), {"case_id": x.case_id, label: human_value(x)})
                    for i, x in enumerate(found, 1)]


def _case_id(row: Any) -> Any:
    """The case id a row of a labels file gives (``case_id``, or ``id``); None for none."""
    return row.get("case_id", row.get("id")) if isinstance(row, Mapping) else None


async def _calibrate_run(run_store: RunStore, run_id: str, labels: str | Path | None,
                         evaluator: str | None, kind: Kind | None, label: str, scale: Any,
                         resamples: int, level: float, seed: int,
                         save: bool) -> CalibrationReport:
    """A stored run's scores against human labels by case id: no judge is called."""
    from assay.calibration.files import parse_scale

    stored = run_store.run_record(run_id)
    built = run_judge(stored, evaluator)
    pairwise = judge_scale(built)["kind"] == "pairwise"
    chosen: Kind | None = "pairwise" if pairwise else kind
    bounds = parse_scale(scale)
    records = {r.case_id: r for r in run_store.case_records(stored.id) if r.repeat == 0}
    if labels is None:
        source, rows = _stored_labels(run_store, stored.id, built.name, label)
    else:
        source, rows = rows_of(labels)
    items: list[LabelledItem] = []
    raw_labels = []
    refuse_duplicate_ids([(str(_case_id(row)), where) for where, row in rows
                          if _case_id(row) is not None], "case_id")
    for where, row in rows:
        if not isinstance(row, Mapping):
            raise CalibrationDataError(f"{where.at()}: a row must be an object")
        case_id = _case_id(row)
        if case_id is None:
            raise CalibrationDataError(f"{where.at('case_id')}: missing")
        if str(case_id) not in records:
            shown = ", ".join(list(records)[:5]) + (", ..." if len(records) > 5 else "")
            raise CalibrationDataError(f"{where.at('case_id')}: case {str(case_id)!r} is not in "
                                       f"run {stored.id} (its cases: {shown or 'none'})")
        if label not in row or row[label] is None:
            raise CalibrationDataError(f"{where.at(label)}: missing")
        raw_labels.append((where, row[label]))
        record = records[str(case_id)]
        items.append(LabelledItem(
            id=str(case_id), input=record.case.input, output=record.execution.output,
            output_2=record.case.expected_output if pairwise else None,
            reference=None if pairwise else record.case.expected_output,
            label="", file=where.file, record=where.record, line=where.line))
    if not items:
        raise CalibrationDataError(f"{source}: no labels")
    if chosen is None:
        chosen = infer_kind([value for _, value in raw_labels])
    if chosen == "ordinal" and bounds is None:
        raise CalibrationDataError("kind 'ordinal' needs the labels' scale, such as 1-5")
    for item, (where, value) in zip(items, raw_labels, strict=True):
        item.label = normal_label(chosen, value, where, label, bounds)
    labelled = LabelledSet(name=Path(str(source)).stem, kind=chosen, items=items,
                           title=f"run {stored.id} with {source}", scale=bounds,
                           files=[str(source)], label_field=label)
    check_fit(labelled, built, judged=False)  # its stored scores: no judge reads the items
    override = stored.config.run.judge_model
    defaults = stored.config.judge_models
    identity = await judge_identity(built, default_model=defaults[0] if len(defaults) == 1
                                    else None, override_model=override)
    judged: Sequence[Judged] = [(item, _score_of(records.get(item.id), built.name))
                                for item in items]
    report = analyse(labelled, judged, identity, passes=passes_of(built),
                     report_id=new_calibration_id(), run_id=stored.id, resamples=resamples,
                     level=level, seed=seed)
    report.notes.append(f"scores of stored run {stored.id}; no judge was called")
    demo_notes(report, identity)
    if save:
        calibrations.save(run_store, report)
    return report


__all__ = ["CalibrationReport", "calibrate", "calibrate_async", "calibration_suite",
           "load_data"]
