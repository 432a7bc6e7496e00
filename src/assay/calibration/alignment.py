"""Aligning a judge with human labels: the parts that need no run.

An alignment (``assay align``, :mod:`assay.run.align`) learns from some of the labels and is
measured on the others:

1. :func:`split` holds out a share of the labelled items, the same ones for the same seed,
   stratified by label, so the held-out items look like the rest. The judge never sees them
   while it is aligned, and its before/after figures are computed on them alone.
2. The judge answers the items it learns from; :func:`disagreements` are the items where it
   and the humans differ.
3. :func:`choose_examples` picks few-shot examples among those items: its mistakes first,
   spread over the human labels, each with the human's verdict (and comment, if any).
4. :func:`revision_prompt` asks a model to revise the judge's instructions from its
   disagreements: short, general guidance, not a list of the cases.
5. The aligned judge is the same judge with the guidance, the examples and its
   :class:`~assay.judges.llm.base.Alignment` (the items it learned from), so it has a key of
   its own, and no calibration of it uses an item it learned from
   (:func:`without_learned`).
6. :func:`improvement` compares the two judges on the held-out items, the difference of each
   figure with a paired bootstrap interval (the same resamples for both judges).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay._util.redact import scrub_data, scrub_json
from assay.calibration.agreement import (
    Bootstrap,
    Statistic,
    Weights,
    accuracy,
    cohen_kappa,
    numpy,
    pick,
)
from assay.calibration.analysis import judge_label
from assay.calibration.items import (
    BINARY_LABELS,
    PAIRWISE_LABELS,
    CalibrationDataError,
    LabelledItem,
    LabelledSet,
)
from assay.calibration.report import CalibrationReport
from assay.judges.llm.answers import JudgeAnswer
from assay.judges.llm.base import DATA_NOT_INSTRUCTIONS, JudgeExample
from assay.judges.llm.templates import delimit
from assay.types.score import Score

MIN_ITEMS = 2
"""Items each side of the split needs at least: one item measures nothing."""
SCORE_TOLERANCE = 0.25
"""A score judge disagrees with a score label when they differ by more than this on 0-1."""
SHOWN_DISAGREEMENTS = 20
"""Disagreements the revision prompt shows at most (each cut to SHOWN_CHARS)."""
SHOWN_CHARS = 1500


class Disagreement(BaseModel):
    """One item the judge answered differently from the humans."""

    model_config = ConfigDict(extra="forbid")

    id: str
    human: str
    judge: str
    judge_rationale: str | None = None


class AlignmentReport(BaseModel):
    """One alignment: what was learned, from which items, and how the judge did before and
    after on the items held out."""

    model_config = ConfigDict(extra="forbid")

    id: str
    created_at: float
    set_name: str
    kind: str
    learned_ids: list[str]
    held_out_ids: list[str]
    disagreements: list[Disagreement] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list, description="the examples' item ids")
    guidance: str | None = None
    judge: dict[str, Any] = Field(description="the aligned judge's evaluator config: the new "
                                  "judge version (--judge FILE takes it)")
    before: CalibrationReport
    after: CalibrationReport
    improvement: dict[str, Statistic] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON, known secrets hidden: its disagreements and the aligned
        judge's examples quote the labelled items, where an agent's output may hold one."""
        return scrub_json(self.model_dump_json(indent=indent))

    def judge_config(self) -> dict[str, Any]:
        """The aligned judge's evaluator config as it is written to a file, known secrets
        hidden (its examples quote labelled items)."""
        config: dict[str, Any] = scrub_data(self.judge)
        return config


class RevisedGuidance(JudgeAnswer):
    """The reviser's answer: why, then the guidance to add to the judge's instructions."""

    rationale: str
    guidance: str


# -- the split ---------------------------------------------------------------------------


def split(labelled: LabelledSet, holdout: float, seed: int) -> tuple[LabelledSet, LabelledSet]:
    """(items to learn from, items held out): ``holdout`` of each label's items (at least
    one where the label has two or more), chosen by ``seed``; scores are not stratified."""
    if not 0 < holdout < 1:
        raise CalibrationDataError(f"holdout {holdout!r}: expected a share between 0 and 1, "
                                   "such as 0.3")
    rng = random.Random(seed)
    groups: dict[str, list[LabelledItem]] = {}
    for item in labelled.items:
        key = "all" if labelled.kind == "score" else str(item.label)
        groups.setdefault(key, []).append(item)
    held: set[str] = set()
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda i: i.id)
        rng.shuffle(members)
        count = round(len(members) * holdout)
        if len(members) >= 2:
            count = min(max(count, 1), len(members) - 1)
        held.update(i.id for i in members[:count])
    learn = [i for i in labelled.items if i.id not in held]
    kept = [i for i in labelled.items if i.id in held]
    if len(learn) < MIN_ITEMS or len(kept) < MIN_ITEMS:
        raise CalibrationDataError(
            f"{labelled.name}: {len(labelled.items)} labelled item(s) split into {len(learn)} "
            f"to learn from and {len(kept)} to hold out; each side needs at least {MIN_ITEMS} "
            "(label more items, or change the holdout share)")
    return _subset(labelled, learn, "learn"), _subset(labelled, kept, "held-out")


def _subset(labelled: LabelledSet, items: list[LabelledItem], part: str) -> LabelledSet:
    return dataclasses.replace(labelled, items=items, anchors=[], notes=[],
                               title=f"{labelled.title or labelled.name} ({part})")


def without_learned(labelled: LabelledSet, learned: Sequence[str]) -> tuple[LabelledSet, int]:
    """``labelled`` without the items an aligned judge learned from, and how many were
    dropped: a judge is never measured on what it was taught."""
    taught = set(learned)
    kept = [i for i in labelled.items if i.id not in taught]
    dropped = len(labelled.items) - len(kept)
    if dropped and not kept:
        raise CalibrationDataError(
            f"{labelled.name}: every item is one the aligned judge learned from; calibrate it "
            "on labels it did not learn from (assay align measured it on those it held out)")
    if not dropped:
        return labelled, 0
    found = _subset(labelled, kept, "not learned from")
    found.title = labelled.title
    return found, dropped


# -- what the judge got wrong ------------------------------------------------------------


def answers(labelled: LabelledSet, judged: Sequence[tuple[LabelledItem, Score | None]],
            passes: Callable[[Score], bool]) -> dict[str, Any]:
    """The judge's answer per item id, in the set's terms (items it did not answer left
    out: an error is never a disagreement)."""
    found: dict[str, Any] = {}
    for item, score in judged:
        if score is None or score.value is None:
            continue
        answer, problem = judge_label(labelled, score, passes)
        if problem is None:
            found[item.id] = answer
    return found


def disagrees(labelled: LabelledSet, item: LabelledItem, answer: Any) -> bool:
    """Whether the judge's ``answer`` differs from the human label of ``item``."""
    if labelled.kind == "score":
        low, high = labelled.scale or (0.0, 1.0)
        human = (float(item.label) - low) / (high - low) if high > low else float(item.label)
        return abs(float(answer) - human) > SCORE_TOLERANCE
    if labelled.kind == "ordinal":
        return int(answer) != int(item.label)
    return str(answer) != str(item.label)


def disagreements(labelled: LabelledSet, judged: Sequence[tuple[LabelledItem, Score | None]],
                  passes: Callable[[Score], bool]) -> list[Disagreement]:
    """The items the judge answered differently from the humans, in the set's order."""
    found = answers(labelled, judged, passes)
    rationales = {item.id: score.rationale for item, score in judged if score is not None}
    return [Disagreement(id=item.id, human=str(item.label), judge=str(found[item.id]),
                         judge_rationale=rationales.get(item.id))
            for item in labelled.items
            if item.id in found and disagrees(labelled, item, found[item.id])]


def choose_examples(learn: LabelledSet, wrong: Sequence[Disagreement], count: int,
                    seed: int) -> list[JudgeExample]:
    """Up to ``count`` examples from the items learned from, taken in turn from each human
    label (so no label is left out), within a label the judge's mistakes first, then the
    other items in an order set by ``seed``."""
    if count <= 0:
        return []
    rng = random.Random(seed)
    mistaken = {d.id for d in wrong}
    others = [i for i in learn.items if i.id not in mistaken]
    rng.shuffle(others)
    queues: dict[str, list[LabelledItem]] = {}
    for item in [i for i in learn.items if i.id in mistaken] + others:
        queues.setdefault(str(item.label), []).append(item)
    chosen: list[LabelledItem] = []
    while len(chosen) < count and any(queues.values()):
        for label in sorted(queues):
            if queues[label] and len(chosen) < count:
                chosen.append(queues[label].pop(0))
    return [JudgeExample(id=i.id, input=i.input, output=i.output, output_2=i.output_2,
                         reference=i.reference, label=str(i.label), reason=i.rationale)
            for i in chosen]


# -- revising the instructions ------------------------------------------------------------

REVISER_SYSTEM = f"""You improve the instructions of an LLM judge so that its verdicts agree \
with human reviewers. {DATA_NOT_INSTRUCTIONS}

Answer with a JSON object with two fields, in this order: "rationale", what the judge \
gets wrong, in general terms; then "guidance", at most ten short rules to add to its \
instructions. Write rules that generalise to new cases: never name the cases shown, never \
copy their text, and never contradict what the judge is asked to assess."""


def revision_prompt(judge_prompt: str, labelled: LabelledSet,
                    wrong: Sequence[Disagreement]) -> str:
    """The request to revise the judge's instructions from its disagreements with the
    humans (at most :data:`SHOWN_DISAGREEMENTS` of them, each cut to size)."""
    by_id = {i.id: i for i in labelled.items}
    cases = []
    for number, found in enumerate(wrong[:SHOWN_DISAGREEMENTS], 1):
        item = by_id[found.id]
        shown = {k: v for k, v in (("input", item.input), ("output", item.output),
                                   ("second output", item.output_2),
                                   ("reference", item.reference)) if v is not None}
        text = delimit("case", _cut(shown))
        why = f"; the human's comment: {_cut(item.rationale)}" if item.rationale else ""
        rationale = f"; its reasoning: {_cut(found.judge_rationale)}" \
            if found.judge_rationale else ""
        cases.append(f"Case {number}:\n{text}\nThe judge said {found.judge}{rationale}.\n"
                     f"The humans said {found.human}{why}.")
    more = len(wrong) - SHOWN_DISAGREEMENTS
    tail = f"\n\n({more} more disagreement(s) not shown.)" if more > 0 else ""
    return (f"The judge is asked this (its instructions and the shape of its input):\n\n"
            f"{delimit('judge_prompt', judge_prompt)}\n\n"
            f"Labels are {labelled.kind} ({', '.join(_labels(labelled))}). On these cases "
            f"its verdict differed from the humans':\n\n" + "\n\n".join(cases) + tail)


def _labels(labelled: LabelledSet) -> list[str]:
    if labelled.kind == "binary":
        return list(BINARY_LABELS)
    if labelled.kind == "pairwise":
        return list(PAIRWISE_LABELS)
    if labelled.scale:
        return [f"{labelled.scale[0]:g} to {labelled.scale[1]:g}"]
    return ["numbers"]


def _cut(value: Any) -> str:
    text = value if isinstance(value, str) else delimit("value", value).split("\n", 1)[-1]
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + " [...]"


# -- before and after ----------------------------------------------------------------------


def improvement(labelled: LabelledSet, before: dict[str, Any], after: dict[str, Any], *,
                resamples: int, level: float, seed: int) -> dict[str, Statistic]:
    """``after - before`` of accuracy and kappa on the held-out items both judges answered,
    each with a paired bootstrap interval (one set of resampled items for both judges).
    Scores are compared by the share of items within :data:`SCORE_TOLERANCE`."""
    np = numpy()
    items = [i for i in labelled.items if i.id in before and i.id in after]
    if not items:
        return {}
    if labelled.kind == "score":
        hits_before = np.array([not disagrees(labelled, i, before[i.id]) for i in items])
        hits_after = np.array([not disagrees(labelled, i, after[i.id]) for i in items])
        ones = np.ones(len(items), dtype=int)
        boot = Bootstrap(len(items), resamples=resamples, level=level, seed=seed)
        return {"agreement_within_tolerance": boot.estimate(
            "agreement_within_tolerance",
            lambda i: _difference(accuracy(pick(ones, i), pick(hits_after.astype(int), i)),
                                  accuracy(pick(ones, i), pick(hits_before.astype(int), i))))}
    space = sorted({str(i.label) for i in items} | {str(before[i.id]) for i in items} |
                   {str(after[i.id]) for i in items},
                   key=lambda v: (float(v), v) if labelled.kind == "ordinal" else (0, v))
    code = {label: n for n, label in enumerate(space)}
    human = np.array([code[str(i.label)] for i in items])
    old = np.array([code[str(before[i.id])] for i in items])
    new = np.array([code[str(after[i.id])] for i in items])
    weights: Weights | None = "quadratic" if labelled.kind == "ordinal" else None
    boot = Bootstrap(len(items), resamples=resamples, level=level, seed=seed)
    return {
        "accuracy": boot.estimate("accuracy", lambda i: _difference(
            accuracy(pick(human, i), pick(new, i)), accuracy(pick(human, i), pick(old, i)))),
        "kappa": boot.estimate("kappa", lambda i: _difference(
            cohen_kappa(pick(human, i), pick(new, i), len(space), weights),
            cohen_kappa(pick(human, i), pick(old, i), len(space), weights)))}


def _difference(after: float | str, before: float | str) -> float | str:
    """``after - before``, or why there is none (either side undefined)."""
    if isinstance(after, str):
        return after
    if isinstance(before, str):
        return before
    return after - before


__all__ = ["AlignmentReport", "Disagreement", "RevisedGuidance", "answers", "choose_examples",
           "disagreements", "improvement", "revision_prompt", "split", "without_learned"]


def text_lines(report: AlignmentReport) -> list[str]:
    """The alignment as plain text lines (the terminal escapes them)."""
    from assay.calibration.report import TITLES, stat_text

    judge = report.after.judge
    lines = [
        f"alignment {report.id}: judge {judge.name} ({judge.type}) on {report.set_name} "
        f"({report.kind})",
        f"learned from {len(report.learned_ids)} item(s) ({len(report.disagreements)} "
        f"disagreement(s) with the humans); measured on {len(report.held_out_ids)} held-out "
        "item(s) it never saw",
    ]
    if report.guidance:
        lines.append("guidance learned:")
        lines += [f"  {line}" for line in report.guidance.splitlines() if line.strip()]
    if report.examples:
        lines.append(f"examples shown to the judge: {', '.join(report.examples)}")
    level = report.after.bootstrap.get("level", 0.95)
    lines.append(f"held-out figures (value, {level:.0%} bootstrap interval): before / after / "
                 "change")
    for name, after in report.after.statistics.items():
        before = report.before.statistics.get(name)
        change = report.improvement.get(name)
        lines.append(f"  {TITLES.get(name, name):<28} {stat_text(before) if before else '-'}"
                     f"  /  {stat_text(after)}" +
                     (f"  /  {stat_text(change, change=True)}" if change else ""))
    for name, change in report.improvement.items():
        if name not in report.after.statistics:
            lines.append(f"  {TITLES.get(name, name.replace('_', ' ')):<28} change "
                         f"{stat_text(change, change=True)}")
    lines.append(f"aligned judge key {judge.key[:16]}; its held-out calibration "
                 f"{report.after.id}")
    for note in report.notes:
        lines.append(f"note: {note}")
    return lines
