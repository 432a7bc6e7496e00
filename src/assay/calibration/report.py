"""What a calibration found, as one typed object: figures, their intervals, and their context.

:class:`CalibrationReport` holds everything a reader (or a renderer) needs: which judge (its
key and what it hashes), which set (where it comes from, its licence), how many items were
judged, errored or skipped, every statistic with its bootstrap interval or the reason it is
undefined, the confusion matrix, per-label rates, the pairwise figures (position consistency
and bias, length bias), per-group figures, the humans' own agreement where the set allows it,
and the published figures on the same data to read it against. The terminal lines, the JSON
and the store all come from this object; an HTML report renders it the same way.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay._util.redact import scrub_json
from assay.calibration.agreement import Statistic
from assay.calibration.key import JudgeIdentity
from assay.types import numbers

HEADLINE = ("accuracy", "kappa", "weighted_kappa", "alpha", "spearman", "kendall", "pearson")
TITLES = {
    "accuracy": "accuracy", "kappa": "Cohen's kappa",
    "weighted_kappa": "weighted kappa (quadratic)", "alpha": "Krippendorff's alpha",
    "spearman": "Spearman's rho", "kendall": "Kendall's tau-b", "pearson": "Pearson's r",
    "accuracy_group_mean": "accuracy, mean of groups",
}


COEFFICIENTS = ("kappa", "weighted_kappa", "alpha", "spearman", "kendall", "pearson")
"""Statistics that are coefficients (agreement beyond chance, correlations): shown with three
digits. Every other figure of a calibration is a rate, a share of items (accuracy, TPR,
position consistency), shown as a percent, or a difference of two rates (``length_bias``),
in points."""
DIFFERENCES = ("length_bias",)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SetDescription(_Model):
    """The labelled data a calibration used."""

    name: str
    title: str = ""
    kind: str
    scale: list[float] | None = None
    items: int = 0
    files: list[str] = Field(default_factory=list)
    licence: str = ""
    source: str = ""
    groups: list[str] = Field(default_factory=list)


class Counts(_Model):
    """Items judged, and what became of them: errors and skips are never in a statistic."""

    items: int = 0
    scored: int = 0
    errors: int = 0
    skipped: int = 0
    error_codes: dict[str, int] = Field(default_factory=dict)


class ConfusionMatrix(_Model):
    """Counts of (human label, judge label): ``counts[i][j]`` items the humans labelled
    ``labels[i]`` and the judge ``labels[j]``."""

    labels: list[str]
    counts: list[list[int]]


class LabelRates(_Model):
    """One label: how many items the humans gave it, how many the judge did, and the
    judge's true-positive and true-negative rates for it."""

    label: str
    support: int
    predicted: int
    tpr: Statistic
    tnr: Statistic


class PairwiseFigures(_Model):
    """What judging in both orders shows. ``favours_first``: the share of pairs where the
    judge picked whichever answer was shown first both times (``favours_second`` likewise);
    the rest of the inconsistent pairs involve a tie. Accuracy per order is against the
    human label (the LLMBar "Acc" is the mean of the two); ``agreement_with_ties`` counts a
    flipped verdict as a tie (MT-Bench S1), ``agreement_decisive`` only pairs where neither
    the judge nor the humans called a tie (S2). Length: how often "always pick the longer
    output" matches the humans, how often the judge and the humans pick the longer output
    when they pick one, and the difference (the judge's length bias)."""

    pairs: int = 0
    position_consistency: Statistic
    favours_first: Statistic
    favours_second: Statistic
    accuracy_first_order: Statistic
    accuracy_second_order: Statistic
    accuracy_mean_of_orders: Statistic
    agreement_with_ties: Statistic
    agreement_decisive: Statistic
    decisive: int = 0
    longer_baseline_accuracy: Statistic
    judge_picks_longer: Statistic
    human_picks_longer: Statistic
    length_bias: Statistic


class GroupFigures(_Model):
    """The statistics of one group of a set (an LLMBar subset, a ROSCOE source)."""

    group: str
    items: int
    statistics: dict[str, Statistic] = Field(default_factory=dict)


class AnchorFigure(_Model):
    """A published figure on the same data."""

    metric: str
    value: float | str
    judge: str
    source: str


class AlignmentNote(_Model):
    """The alignment a calibration measured (``assay align``): the judge aligned from the one
    with ``base_key`` on ``learned`` items, measured on ``held_out`` items it never saw, with
    the base judge's figures on the same items and each figure's change (a paired interval)."""

    id: str
    base_key: str
    learned: int
    held_out: list[str] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list)
    guidance: str | None = None
    before: dict[str, Statistic] = Field(default_factory=dict)
    improvement: dict[str, Statistic] = Field(default_factory=dict)


class CalibrationReport(_Model):
    """One calibration of one judge on one labelled set."""

    id: str
    created_at: float
    assay_version: str = ""
    set: SetDescription
    judge: JudgeIdentity
    run_id: str | None = None
    counts: Counts = Field(default_factory=Counts)
    statistics: dict[str, Statistic] = Field(default_factory=dict)
    confusion: ConfusionMatrix | None = None
    labels: list[LabelRates] = Field(default_factory=list)
    pairwise: PairwiseFigures | None = None
    groups: list[GroupFigures] = Field(default_factory=list)
    human: dict[str, Statistic] = Field(
        default_factory=dict, description="the humans' agreement with each other, where the "
        "set keeps each human's label: the ceiling a judge can be read against")
    anchors: list[AnchorFigure] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    bootstrap: dict[str, Any] = Field(default_factory=dict)
    alignment: AlignmentNote | None = Field(
        default=None, description="set when this calibration measured an aligned judge on "
        "the labels held out from its alignment")

    @property
    def kappa(self) -> Statistic | None:
        """The kappa a gate uses: quadratic-weighted for ordinal labels, Cohen's otherwise;
        None for scores (compared by correlation)."""
        found = self.statistics.get("weighted_kappa") or self.statistics.get("kappa")
        return found

    @property
    def accuracy(self) -> Statistic | None:
        return self.statistics.get("accuracy")

    def headline(self) -> dict[str, float | None]:
        """The main figures by name (None where undefined)."""
        return {name: self.statistics[name].value for name in HEADLINE
                if name in self.statistics}

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON, known secrets hidden: what ``--json`` prints and ``--output``
        writes (the store scrubs its own rows)."""
        return scrub_json(self.model_dump_json(indent=indent))


def figure(name: str, value: float | None) -> str:
    """A calibration figure named ``name`` as :mod:`assay.types.numbers` shows its kind: a
    coefficient ``0.612`` (see :data:`COEFFICIENTS`; the humans' pairwise kappas too), a
    rate ``81.2%``, a difference of two rates ``+12.0 pt``."""
    if name in DIFFERENCES:
        return numbers.percent_points(value)
    if name in COEFFICIENTS or name.startswith("kappa"):
        return numbers.score(value)
    return numbers.percent(value)


def change_figure(name: str, value: float | None) -> str:
    """A change of the figure named ``name``: a rate's in points (``+12.0 pt``), a
    coefficient's signed (``+0.120``)."""
    if name in DIFFERENCES or not (name in COEFFICIENTS or name.startswith("kappa")):
        return numbers.percent_points(value)
    return numbers.score_delta(value)


def stat_text(stat: Statistic, change: bool = False) -> str:
    """``0.612 [0.540, 0.680]``, ``81.2% [74.0%, 87.0%]``, or ``undefined: why``; with
    ``change`` the statistic is a difference of two (``+12.0 pt [+2.0 pt, +20.0 pt]``)."""
    if stat.value is None:
        return stat.undefined or "undefined"
    shown = change_figure if change else figure
    interval = f"  [{shown(stat.name, stat.low)}, {shown(stat.name, stat.high)}]" \
        if stat.low is not None else ""
    note = f"  ({stat.note})" if stat.note else ""
    return f"{shown(stat.name, stat.value)}{interval}{note}"


def text_lines(report: CalibrationReport) -> list[str]:
    """The report as plain text lines (no markup): the terminal shows them escaped."""
    level = report.bootstrap.get("level", 0.95)
    counts = report.counts
    models = ", ".join(report.judge.models) or "no model"
    lines = [
        f"calibration {report.id}: judge {report.judge.name} ({report.judge.type}, {models}) "
        f"on {report.set.name} ({report.set.kind}, {report.set.items} items)",
        f"judge key {report.judge.key[:16]}; run {report.run_id or '-'}",
        f"scored {counts.scored} of {counts.items}; errors {counts.errors}; skipped "
        f"{counts.skipped}" + (f" ({', '.join(f'{k}: {v}' for k, v in counts.error_codes.items())})"
                               if counts.error_codes else ""),
        f"statistics (value, {numbers.percent(level)} bootstrap interval):",
    ]
    for name, stat in report.statistics.items():
        lines.append(f"  {TITLES.get(name, name):<28} {stat_text(stat)}")
    if report.confusion is not None:
        labels = report.confusion.labels
        width = max(6, *(len(label) for label in labels))
        lines.append("confusion (rows: humans, columns: judge):")
        lines.append("  " + " " * width + "".join(f"{label:>{width + 2}}" for label in labels))
        for label, row in zip(labels, report.confusion.counts, strict=True):
            lines.append(f"  {label:<{width}}" + "".join(f"{n:>{width + 2}}" for n in row))
    for rates in report.labels:
        lines.append(f"  label {rates.label}: humans {rates.support}, judge {rates.predicted}; "
                     f"TPR {stat_text(rates.tpr)}; TNR {stat_text(rates.tnr)}")
    if report.pairwise is not None:
        pair = report.pairwise
        lines.append(f"pairwise ({pair.pairs} pairs judged in both orders):")
        for name in ("position_consistency", "favours_first", "favours_second",
                     "accuracy_first_order", "accuracy_second_order",
                     "accuracy_mean_of_orders", "agreement_with_ties", "agreement_decisive",
                     "longer_baseline_accuracy", "judge_picks_longer", "human_picks_longer",
                     "length_bias"):
            lines.append(f"  {name.replace('_', ' '):<28} {stat_text(getattr(pair, name))}")
    for group in report.groups:
        shown = "; ".join(f"{TITLES.get(k, k.replace('_', ' '))} {stat_text(v)}"
                          for k, v in group.statistics.items())
        lines.append(f"group {group.group} ({group.items}): {shown}")
    if report.human:
        lines.append("humans with each other:")
        for name, stat in report.human.items():
            lines.append(f"  {name:<28} {stat_text(stat)}")
    if report.anchors:
        lines.append("published on the same data:")
        for anchor in report.anchors:
            value = anchor.value if isinstance(anchor.value, str) else \
                figure(anchor.metric, anchor.value)
            lines.append(f"  {anchor.metric} {value}: {anchor.judge} ({anchor.source})")
    if report.alignment is not None:
        aligned = report.alignment
        lines.append(f"aligned judge: alignment {aligned.id} of the judge keyed "
                     f"{aligned.base_key[:16]}, learned from {aligned.learned} label(s), "
                     f"measured here on {len(aligned.held_out)} it never saw")
    for note in report.notes:
        lines.append(f"note: {note}")
    return lines
