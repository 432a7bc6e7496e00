"""Judge alignment as a library call: :func:`align` improves a judge from human labels.

::

    report = assay.align("labels.jsonl", judge={"type": "correctness"},
                         judge_model="openai:gpt-4o-mini", holdout=0.3)
    report.before.accuracy, report.after.accuracy, report.improvement["accuracy"]
    report.judge                    # the aligned judge's config: the new judge version

The labelled items are split (:func:`assay.calibration.alignment.split`): the judge learns
from one part and is measured on the other, never on what it learned from. It answers the
items it learns from; where it disagrees with the humans, a model (``reviser_model``, else
the judge's) revises its instructions into short general guidance, and examples are chosen
among those items, its mistakes first. The aligned judge is the same judge with that guidance,
those examples and the record of what it learned from, so it has a key of its own. Then both
judges answer the held-out items, and the report compares them: each judge's calibration
figures with bootstrap intervals, and each figure's change with a paired interval.

The aligned judge's calibration on the held-out items is stored under its key with the
alignment (:class:`~assay.calibration.report.AlignmentNote`), so the calibration gate of a
run that uses it finds the version that was measured, and how it was measured; ``assay
calibrate`` never counts an item an aligned judge learned from.

Labels come from a labels file (or a built-in set, rows, a DataFrame). The run store holds
no human labels of its own: there is no table of labels collected in the viewer to read.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay._util.user_paths import user_path
from assay.calibration import store as calibrations
from assay.calibration.agreement import numpy
from assay.calibration.alignment import (
    REVISER_SYSTEM,
    AlignmentReport,
    Disagreement,
    RevisedGuidance,
    answers,
    choose_examples,
    disagreements,
    improvement,
    revision_prompt,
    split,
)
from assay.calibration.analysis import analyse
from assay.calibration.fit import check_fit
from assay.calibration.items import Kind, LabelledSet
from assay.calibration.key import JudgeIdentity, judge_identity, probe_requests
from assay.calibration.report import AlignmentNote, CalibrationReport
from assay.errors import ConfigError
from assay.judges.llm.base import Alignment, LLMEvaluator
from assay.llm.build import build_engine
from assay.llm.engine import JudgeEngine
from assay.llm.structured import ask_structured
from assay.run.calibrate import (
    calibration_config,
    demo_notes,
    judge_labelled,
    labelled_cases,
    load_data,
    new_calibration_id,
    passes_of,
    run_judge,
    suite_evaluator,
)
from assay.run.evaluate import EvaluatorLike, OnInputs, StoreLike, as_evaluator, open_store
from assay.run.runner import Progress
from assay.run.sync import run_sync
from assay.suites.model import Suite
from assay.types.engine_config import CacheMode, RetryPolicy


def align(data: Any = None, **kwargs: Any) -> AlignmentReport:
    """Align a judge with human labels. See :func:`align_async`."""
    return run_sync(align_async(data, **kwargs))


async def align_async(
        data: Any = None, *, judge: EvaluatorLike | None = None,
        suite: str | Path | Suite | None = None, evaluator: str | None = None,
        judge_model: str | None = None, reviser_model: str | None = None,
        holdout: float = 0.3, examples: int = 4, seed: int = 0,
        store: StoreLike = None, kind: Kind | None = None, label: str = "label",
        scale: Any = None, columns: Mapping[str, str] | None = None, limit: int | None = None,
        concurrency: int = 8, cache: CacheMode | None = None, retry: RetryPolicy | None = None,
        resamples: int = 1000, level: float = 0.95, engine: JudgeEngine | None = None,
        progress: Progress | None = None, save: bool = True,
        on_inputs: OnInputs | None = None, run: str | None = None) -> AlignmentReport:
    """Learn from part of ``data``'s labels to improve ``judge``; measure it on the rest.

    Args:
        data: labelled data as :func:`assay.calibrate` takes it (a labels file, a built-in
            set, rows, a DataFrame).
        judge, suite, evaluator: the judge to align (as for calibrate): an evaluator, a type
            name or config, or evaluator ``evaluator`` of ``suite``. It must ask a model.
        judge_model: the judge model, overriding the judge's own.
        reviser_model: the model that revises the instructions (default: the judge's).
        holdout: the share of the items held out to measure the aligned judge (0.3).
        examples: how many labelled examples the aligned judge is shown (4; 0 for none).
        seed: chooses the held-out items, the examples and the bootstrap's resamples.
        save: store the aligned judge's held-out calibration (with the alignment) under its
            key, where the calibration gate finds it.
        on_inputs: called with every file the alignment uses before any judge is called.
        run: a stored run whose cases people labelled in the viewer (``assay serve``'s case
            pages): those cases are the labelled data, and the judge is the run's
            (``evaluator``, else its one LLM judge) unless ``judge`` is given.
    """
    numpy()  # statistics need the stats extra: say so before anything runs
    if isinstance(examples, bool) or not isinstance(examples, int) or not 0 <= examples <= 50:
        raise ConfigError(f"examples {examples!r}: expected a whole number from 0 to 50")
    run_store = open_store(store)
    if run is not None:
        if data is not None or suite is not None:
            raise ConfigError("give the labels as a file or as a run (--run), not both; a "
                              "run's judge is its own (or --judge)")
        stored = run_store.run_record(run)
        run = stored.id
        chosen = run_judge(stored, evaluator)
        data = labelled_cases(run_store, stored.id, chosen.name)
        if judge is None:
            judge = chosen
    own: dict[Path, str] = {}
    if isinstance(data, str | Path) and user_path(data).exists():
        own[user_path(data)] = "the labelled data"
    suite_model: str | None = None
    if suite is not None:
        if judge is not None:
            raise ConfigError("give the judge with judge= (--judge) or suite= (--suite), "
                              "not both")
        judge, suite_model, files = suite_evaluator(suite, evaluator,
                                                    resolve_judge=judge_model is None)
        own.update(files)
    labelled = load_data(data, limit=limit, kind=kind, label=label, scale=scale,
                         columns=columns)
    base = _base(judge if judge is not None else labelled.default_judge, labelled)
    check_fit(labelled, base)
    learn, held = split(labelled, holdout, seed)
    config = calibration_config(concurrency, judge_model, cache, retry)
    own_engine = engine is None
    if engine is None:
        engine = build_engine(config)
    if on_inputs is not None:
        on_inputs({**engine.config.input_files(), **run_store.input_files(), **own})
    models = {"default_model": engine.config.default_model, "judge_model": suite_model,
              "override_model": judge_model}
    try:
        base_id = await judge_identity(base, **models)
        judged, _ = await judge_labelled(learn, base, config=config, engine=engine,
                                         store=run_store, progress=progress,
                                         judge_model=suite_model)
        wrong = disagreements(learn, judged, passes_of(base))
        alignment_id = "align-" + new_calibration_id().removeprefix("cal-")
        guidance = await _revised(engine, base, learn, wrong, reviser_model or judge_model,
                                  models) if wrong else None
        aligned = base.model_copy(update={
            "guidance": guidance, "examples": choose_examples(learn, wrong, examples, seed),
            "aligned": Alignment(id=alignment_id, base_key=base_id.key, set_name=labelled.name,
                                 learned_ids=[i.id for i in learn.items])})
        aligned_id = await judge_identity(aligned, **models)
        if aligned_id.prompt_hash == base_id.prompt_hash and (guidance or aligned.examples):
            raise ConfigError(f"judge {base.name!r} ({base.type}) does not show what it was "
                              "taught to its model, so it cannot be aligned")
        before = await _measure(held, base, base_id, config, engine, run_store, progress,
                                suite_model, resamples, level, seed)
        after = await _measure(held, aligned, aligned_id, config, engine, run_store,
                               progress, suite_model, resamples, level, seed)
    finally:
        if own_engine:
            await engine.aclose()
    change = improvement(held, before[1], after[1], resamples=resamples, level=level,
                         seed=seed)
    report = after[0]
    report.alignment = AlignmentNote(
        id=alignment_id, base_key=base_id.key, learned=len(learn.items),
        held_out=[i.id for i in held.items], examples=[e.id for e in aligned.examples],
        guidance=guidance, before=before[0].statistics, improvement=change)
    notes = [f"learned from the human labels of run {run}"] if run is not None else []
    if not wrong:
        notes.append("the judge agreed with every label it learned from: no guidance was "
                     "written, only examples were added")
    if save:
        calibrations.save(run_store, report)
    return AlignmentReport(
        id=alignment_id, created_at=time.time(), set_name=labelled.name, kind=labelled.kind,
        learned_ids=[i.id for i in learn.items], held_out_ids=[i.id for i in held.items],
        disagreements=wrong, examples=[e.id for e in aligned.examples], guidance=guidance,
        judge={"type": aligned.type, **aligned.model_dump(mode="json", exclude_defaults=True)},
        before=before[0], after=report, improvement=change, notes=notes)


def _base(chosen: Any, labelled: LabelledSet) -> LLMEvaluator:
    """The judge to align: one that asks a model, and not aligned already."""
    if chosen is None:
        raise ConfigError(f"{labelled.name}: give the judge to align (judge=, or --judge "
                          "FILE): this data has no default judge")
    built = as_evaluator(chosen, "judge")
    if not isinstance(built, LLMEvaluator):
        raise ConfigError(f"judge {built.name!r} ({built.type}) asks no model: only an LLM "
                          "judge can learn from labels")
    if built.aligned is not None:
        raise ConfigError(f"judge {built.name!r} is aligned already (alignment "
                          f"{built.aligned.id}); align the judge it was made from, with "
                          "more labels")
    return built


async def _revised(engine: JudgeEngine, judge: LLMEvaluator, learn: LabelledSet,
                   wrong: list[Disagreement], model: str | None,
                   models: dict[str, Any]) -> str | None:
    """Guidance revised from the judge's disagreements, or None when the reviser could not
    give any (the examples still align the judge)."""
    requests = await probe_requests(judge, **models)
    shown = "\n\n".join(f"{m.get('role')}: {m.get('content')}"
                        for _, request in requests[:1] for m in request.get("messages", []))
    messages = [{"role": "system", "content": REVISER_SYSTEM},
                {"role": "user", "content": revision_prompt(shown, learn, wrong)}]
    result = await ask_structured(engine, messages, RevisedGuidance,
                                  model=model or judge.model, name="revised_guidance")
    if result.value is None:
        assert result.error is not None
        raise ConfigError(f"the instructions could not be revised: {result.error.code}: "
                          f"{result.error.message}", code="alignment_failed")
    return result.value.guidance.strip() or None


async def _measure(held: LabelledSet, judge: LLMEvaluator, identity: JudgeIdentity,
                   config: Any, engine: JudgeEngine, store: Any, progress: Progress | None,
                   suite_model: str | None, resamples: int, level: float,
                   seed: int) -> tuple[CalibrationReport, dict[str, Any]]:
    """``judge``'s calibration on the held-out items, and its answer per item."""
    judged, run_id = await judge_labelled(held, judge, config=config, engine=engine,
                                          store=store, progress=progress,
                                          judge_model=suite_model)
    report = analyse(held, judged, identity, passes=passes_of(judge),
                     report_id=new_calibration_id(), run_id=run_id, resamples=resamples,
                     level=level, seed=seed)
    demo_notes(report, identity)
    return report, answers(held, judged, passes_of(judge))


