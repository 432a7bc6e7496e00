"""From judged items to a :class:`CalibrationReport`: the judge's answers against the humans'.

Each item's judge label is read from its score the one way its kind allows: a pairwise
judge's ``label`` (``1``, ``2`` or ``tie``), a pass/fail verdict for binary sets, the raw
rating (a whole number on the set's scale) for ordinal sets, the 0-1 value for scores. An
item whose judgement errored, was skipped or is missing is counted and left out of every
statistic: an error is never a disagreement (nor an agreement).

Statistics per kind:

- binary and pairwise: accuracy, Cohen's kappa, Krippendorff's alpha (nominal), the confusion
  matrix and each label's true-positive and true-negative rates; pairwise adds the figures of
  :class:`PairwiseFigures`.
- ordinal: exact accuracy, Cohen's kappa, quadratic-weighted kappa, alpha (ordinal),
  Spearman and Kendall, the confusion matrix over the scale.
- score: Spearman, Kendall, Pearson and alpha (interval, with the human labels put on 0-1 by
  the set's declared scale).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay._version import __version__
from assay.calibration.agreement import (
    Bootstrap,
    Reliability,
    Statistic,
    Value,
    accuracy,
    batch_accuracy,
    batch_correlation,
    batch_kappa,
    batch_rates,
    batch_share,
    cohen_kappa,
    confusion,
    correlation,
    label_rates,
    numpy,
    pick,
)
from assay.calibration.items import (
    BINARY_LABELS,
    PAIRWISE_LABELS,
    LabelledItem,
    LabelledSet,
)
from assay.calibration.key import JudgeIdentity
from assay.calibration.report import (
    AnchorFigure,
    CalibrationReport,
    ConfusionMatrix,
    Counts,
    GroupFigures,
    LabelRates,
    PairwiseFigures,
    SetDescription,
)
from assay.judges.llm.templates import as_text
from assay.types.score import Score

Judged = tuple[LabelledItem, Score | None]


def analyse(labelled: LabelledSet, judged: Sequence[Judged], identity: JudgeIdentity, *,
            passes: Callable[[Score], bool], report_id: str, run_id: str | None = None,
            resamples: int = 1000, level: float = 0.95, seed: int = 0) -> CalibrationReport:
    """The calibration report of ``judged`` (each item with its judge's score, or None)."""
    np = numpy()
    counts = Counts(items=len(judged))
    codes: Counter[str] = Counter()
    kept: list[tuple[LabelledItem, Score, Any]] = []
    for item, score in judged:
        if score is None:
            counts.errors += 1
            codes["not_judged"] += 1
            continue
        if score.value is None:
            if score.error is not None:
                counts.errors += 1
                codes[score.error.code] += 1
            else:
                counts.skipped += 1
            continue
        answer, problem = judge_label(labelled, score, passes)
        if problem is not None:
            counts.errors += 1
            codes[problem] += 1
            continue
        kept.append((item, score, answer))
    counts.scored = len(kept)
    counts.error_codes = dict(codes)
    boot = Bootstrap(len(kept), resamples=resamples, level=level, seed=seed)
    report = CalibrationReport(
        id=report_id, created_at=time.time(), assay_version=__version__,
        set=SetDescription(name=labelled.name, title=labelled.title, kind=labelled.kind,
                           scale=list(labelled.scale) if labelled.scale else None,
                           items=len(labelled.items), files=labelled.files,
                           licence=labelled.licence, source=labelled.source,
                           groups=labelled.groups),
        judge=identity, run_id=run_id, counts=counts,
        anchors=[AnchorFigure(metric=a.metric, value=a.value, judge=a.judge, source=a.source)
                 for a in labelled.anchors],
        notes=list(labelled.notes),
        bootstrap={"resamples": resamples, "level": level, "seed": seed,
                   "method": "percentile, resampling items"})
    if counts.errors or counts.skipped:
        report.notes.append(f"{counts.errors} error(s) and {counts.skipped} skip(s) are left "
                            f"out: the statistics are over {counts.scored} of "
                            f"{counts.items} items")
    if not kept:
        report.notes.append("no item was scored: there is nothing to compare")
        return report
    found = _scores(labelled, kept, boot) if labelled.kind == "score" else \
        _categorical(labelled, kept, boot)
    report.statistics = found.statistics
    report.confusion = found.confusion
    report.labels = found.labels
    report.notes.extend(found.notes)
    if labelled.kind == "pairwise":
        report.pairwise = _pairwise(kept, boot)
    report.groups = _groups(labelled, kept, resamples, level, seed)
    if len(report.groups) > 1 and labelled.kind != "score":
        report.statistics["accuracy_group_mean"] = boot.estimate(
            "accuracy_group_mean", *_group_mean(labelled, kept))
    report.human = _human(labelled, np, resamples, level, seed)
    return report


def _group_mean(labelled: LabelledSet,
                kept: list[tuple[LabelledItem, Score, Any]]) -> Estimator:
    """The unweighted mean over groups of each group's accuracy (for pairs, the mean of the
    two orders' accuracies), as LLMBar reports its adversarial subsets: a small group counts
    as much as a large one. Undefined in a resample that lacks a group."""
    np = numpy()
    groups = np.array([item.group or "" for item, _, _ in kept])
    masks = [groups == g for g in labelled.groups]
    if labelled.kind == "pairwise":
        human = np.array([str(item.label) for item, _, _ in kept])
        picks = [_order_picks(score) for _, score, _ in kept]
        first = np.array([p[0] for p in picks])
        second = np.array([p[1] for p in picks])
        both = (first != "") & (second != "")
        hits = [(first == human), (second == human)]
        base = both
    else:
        human = np.array([str(_normal(item.label, labelled)) for item, _, _ in kept])
        judged = np.array([str(answer) for _, _, answer in kept])
        hits = [human == judged]
        base = np.ones(len(kept), dtype=bool)

    def statistic(i: Any) -> Value:
        means = []
        for mask in masks:
            m = pick(mask & base, i)
            if not m.any():
                return "undefined: a group has no judged item"
            means.append(sum(float((m & pick(hit, i)).sum()) / m.sum() for hit in hits)
                         / len(hits))
        return sum(means) / len(means)

    def batch(sample: Any) -> Any:
        per_group = [sum(batch_share(mask & base, hit, sample) for hit in hits) / len(hits)
                     for mask in masks]
        return np.mean(np.stack(per_group), axis=0)  # NaN where a group is missing

    return statistic, batch


def judge_label(labelled: LabelledSet, score: Score,
                passes: Callable[[Score], bool]) -> tuple[Any, str | None]:
    """The judge's answer in the set's terms, or the error code saying why there is none."""
    if labelled.kind == "pairwise":
        if score.label in PAIRWISE_LABELS:
            return score.label, None
        return None, "no_pairwise_label"
    if labelled.kind == "binary":
        return ("pass" if passes(score) else "fail"), None
    if labelled.kind == "ordinal":
        raw = score.raw
        if isinstance(raw, bool) or not isinstance(raw, int | float) or \
                not math.isfinite(raw) or labelled.scale is None:
            return None, "no_rating"  # NaN or infinity: no rating, not a crash
        rating = int(raw + 0.5) if raw >= 0 else -int(-raw + 0.5)  # half up, not to even
        low, high = labelled.scale
        if not low <= rating <= high:
            return None, "off_scale"
        return rating, None
    return float(score.value or 0.0), None


def _label_space(labelled: LabelledSet, kept: list[tuple[LabelledItem, Score, Any]]
                 ) -> list[Any]:
    if labelled.kind == "pairwise":
        used = {item.label for item, _, _ in kept} | {answer for _, _, answer in kept}
        return [label for label in PAIRWISE_LABELS if label != "tie" or "tie" in used]
    if labelled.kind == "binary":
        return list(BINARY_LABELS)
    assert labelled.scale is not None
    low, high = labelled.scale
    return list(range(int(low), int(high) + 1))


@dataclass
class _Found:
    """Statistics of some items, with the confusion matrix and label rates where computed."""

    statistics: dict[str, Statistic] = field(default_factory=dict)
    confusion: ConfusionMatrix | None = None
    labels: list[LabelRates] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _categorical(labelled: LabelledSet, kept: list[tuple[LabelledItem, Score, Any]],
                 boot: Bootstrap, full: bool = True) -> _Found:
    np = numpy()
    space = _label_space(labelled, kept)
    index = {label: i for i, label in enumerate(space)}
    k = len(space)
    human = np.array([index[_normal(item.label, labelled)] for item, _, _ in kept])
    judge = np.array([index[answer] for _, _, answer in kept])
    found = _Found()
    stats = found.statistics
    stats["accuracy"] = boot.estimate(
        "accuracy", lambda i: accuracy(pick(human, i), pick(judge, i)),
        lambda d: batch_accuracy(human, judge, d))
    stats["kappa"] = boot.estimate(
        "kappa", lambda i: cohen_kappa(pick(human, i), pick(judge, i), k),
        lambda d: batch_kappa(human, judge, k, d))
    if labelled.kind == "ordinal":
        stats["weighted_kappa"] = boot.estimate(
            "weighted_kappa",
            lambda i: cohen_kappa(pick(human, i), pick(judge, i), k, "quadratic"),
            lambda d: batch_kappa(human, judge, k, d, "quadratic"))
    if not full:
        return found
    pairs = Reliability(np.stack([human, judge], axis=1),
                        "ordinal" if labelled.kind == "ordinal" else "nominal")
    stats["alpha"] = boot.estimate("alpha", pairs.alpha, pairs.alpha_batch)
    if labelled.kind == "ordinal":
        h, j = human.astype(float), judge.astype(float)
        for name in ("spearman", "kendall"):
            stats[name] = boot.estimate(name, *_correlation(name, h, j))
    found.confusion = ConfusionMatrix(labels=[str(s) for s in space],
                                      counts=confusion(human, judge, k).tolist())
    if labelled.kind != "ordinal":
        for label, code in index.items():
            tpr = boot.estimate("tpr", *_rate(human, judge, code, 0))
            tnr = boot.estimate("tnr", *_rate(human, judge, code, 1))
            found.labels.append(LabelRates(
                label=str(label), support=int((human == code).sum()),
                predicted=int((judge == code).sum()), tpr=tpr, tnr=tnr))
    return found


Estimator = tuple[Callable[[Any], Value], Callable[[Any], Any] | None]
"""A statistic on some items, and the same for every resample at once (or None)."""


def _correlation(name: Any, human: Any, judge: Any) -> Estimator:
    def batch(d: Any) -> Any:
        return batch_correlation(name, human, judge, d)
    return (lambda i: correlation(name, pick(human, i), pick(judge, i)),
            batch if name != "kendall" else None)


def _rate(human: Any, judge: Any, code: int, which: int) -> Estimator:
    return (lambda i: label_rates(pick(human, i), pick(judge, i), code)[which],
            lambda d: batch_rates(human, judge, code, d)[which])


def _kappa(first: Any, second: Any, k: int) -> Estimator:
    return (lambda i: cohen_kappa(pick(first, i), pick(second, i), k),
            lambda d: batch_kappa(first, second, k, d))


def _normal(label: Any, labelled: LabelledSet) -> Any:
    return int(label) if labelled.kind == "ordinal" else label


def _scores(labelled: LabelledSet, kept: list[tuple[LabelledItem, Score, Any]],
            boot: Bootstrap, full: bool = True) -> _Found:
    np = numpy()
    human = np.array([float(item.label) for item, _, _ in kept])
    judge = np.array([float(answer) for _, _, answer in kept])
    found = _Found()
    stats = found.statistics
    for name in ("spearman", "kendall", "pearson"):
        stats[name] = boot.estimate(name, *_correlation(name, human, judge))
    if not full:
        return found
    if labelled.scale is None:
        stats["alpha"] = Statistic(
            name="alpha", value=None, n=len(kept),
            undefined="undefined: the labels have no declared scale to put them on the "
            "judge's 0-1 scale")
    else:
        low, high = labelled.scale
        normal = (human - low) / (high - low)
        pairs = Reliability(np.stack([normal, judge], axis=1), "interval")
        stats["alpha"] = boot.estimate("alpha", pairs.alpha, pairs.alpha_batch)
    distinct = len(set(judge.tolist()))
    if distinct * 4 < len(judge):
        found.notes.append(
            f"the judge used only {distinct} distinct scores on {len(judge)} items: ties "
            "blunt rank correlations (a rating judge with logprobs: true gives continuous "
            "scores)")
    return found


def _pairwise(kept: list[tuple[LabelledItem, Score, Any]], boot: Bootstrap,
              brief: bool = False) -> PairwiseFigures:
    """The figures of judging in both orders; ``brief``: only position consistency and the
    accuracy of each order (what a group shows), the rest left undefined."""
    np = numpy()
    human = np.array([str(item.label) for item, _, _ in kept])
    combined = np.array([str(answer) for _, _, answer in kept])
    first, second = [], []
    for _, score, _ in kept:
        picked = _order_picks(score)
        first.append(picked[0])
        second.append(picked[1])
    first_a, second_a = np.array(first), np.array(second)
    both = (first_a != "") & (second_a != "")
    lengths = np.array([[len(as_text(item.output)), len(as_text(item.output_2))]
                        for item, _, _ in kept])
    longer = np.where(lengths[:, 0] > lengths[:, 1], "1",
                      np.where(lengths[:, 1] > lengths[:, 0], "2", "tie"))
    no_orders = "undefined: the judge does not record its verdict in each order"

    def share(mask: Any, hit: Any, none: str) -> Estimator:
        def statistic(i: Any) -> Value:
            m, h = pick(mask, i), pick(hit, i)
            total = int(m.sum())
            return float((m & h).sum()) / total if total else none
        return statistic, lambda d: batch_share(mask, hit, d)

    def combined_of(first: Estimator, second: Estimator,
                    how: Callable[[Any, Any], Any]) -> Estimator:
        def statistic(i: Any) -> Value:
            a, b = first[0](i), second[0](i)
            if isinstance(a, str) or isinstance(b, str):
                return a if isinstance(a, str) else b
            return float(how(a, b))

        def batch(d: Any) -> Any:
            assert first[1] is not None and second[1] is not None
            return how(first[1](d), second[1](d))
        return statistic, batch

    decisive = (combined != "tie") & (human != "tie")
    human_decisive = human != "tie"
    lengths_differ = longer != "tie"
    first_right = share(both, first_a == human, no_orders)
    second_right = share(both, second_a == human, no_orders)
    judge_longer = share((combined != "tie") & lengths_differ, combined == longer,
                         "undefined: the judge picked no output of a pair of unequal length")
    human_longer = share(human_decisive & lengths_differ, human == longer,
                         "undefined: the humans picked no output of a pair of unequal length")
    everything = np.ones(len(kept), dtype=bool)
    if brief:
        skipped = Statistic(name="-", value=None, undefined="not computed for a group")
        return PairwiseFigures(
            pairs=int(both.sum()),
            position_consistency=boot.estimate(
                "position_consistency", *share(both, first_a == second_a, no_orders)),
            accuracy_mean_of_orders=boot.estimate(
                "accuracy_mean_of_orders",
                *combined_of(first_right, second_right, lambda a, b: (a + b) / 2)),
            favours_first=skipped, favours_second=skipped, accuracy_first_order=skipped,
            accuracy_second_order=skipped, agreement_with_ties=skipped,
            agreement_decisive=skipped, longer_baseline_accuracy=skipped,
            judge_picks_longer=skipped, human_picks_longer=skipped, length_bias=skipped)
    return PairwiseFigures(
        pairs=int(both.sum()),
        position_consistency=boot.estimate(
            "position_consistency", *share(both, first_a == second_a, no_orders)),
        favours_first=boot.estimate(
            "favours_first", *share(both, (first_a == "1") & (second_a == "2"), no_orders)),
        favours_second=boot.estimate(
            "favours_second", *share(both, (first_a == "2") & (second_a == "1"), no_orders)),
        accuracy_first_order=boot.estimate("accuracy_first_order", *first_right),
        accuracy_second_order=boot.estimate("accuracy_second_order", *second_right),
        accuracy_mean_of_orders=boot.estimate(
            "accuracy_mean_of_orders",
            *combined_of(first_right, second_right, lambda a, b: (a + b) / 2)),
        agreement_with_ties=boot.estimate(
            "agreement_with_ties", *share(everything, combined == human, "no items")),
        agreement_decisive=boot.estimate(
            "agreement_decisive", *share(decisive, combined == human,
                                         "undefined: no pair where both the judge and the "
                                         "humans picked an output")),
        decisive=int(decisive.sum()),
        longer_baseline_accuracy=boot.estimate(
            "longer_baseline_accuracy", *share(human_decisive, longer == human,
                                               "undefined: the humans called every pair a "
                                               "tie")),
        judge_picks_longer=boot.estimate("judge_picks_longer", *judge_longer),
        human_picks_longer=boot.estimate("human_picks_longer", *human_longer),
        length_bias=boot.estimate(
            "length_bias", *combined_of(judge_longer, human_longer, lambda a, b: a - b)))


def _order_picks(score: Score) -> tuple[str, str]:
    """The answer (``1``, ``2``, ``tie``) picked in each order, or "" where not recorded."""
    orders = (score.details or {}).get("orders")
    if not isinstance(orders, list) or len(orders) != 2:
        return "", ""
    picks = []
    for order in orders:
        picked = order.get("picked") if isinstance(order, dict) else None
        picks.append(picked if picked in PAIRWISE_LABELS else "")
    return picks[0], picks[1]


def _groups(labelled: LabelledSet, kept: list[tuple[LabelledItem, Score, Any]],
            resamples: int, level: float, seed: int) -> list[GroupFigures]:
    groups = labelled.groups
    if len(groups) < 2:
        return []
    out = []
    for group in groups:
        members = [k for k in kept if k[0].group == group]
        if not members:
            out.append(GroupFigures(group=group, items=0))
            continue
        boot = Bootstrap(len(members), resamples=resamples, level=level, seed=seed)
        statistics = (_scores if labelled.kind == "score" else _categorical)(
            labelled, members, boot, full=False).statistics
        if labelled.kind == "pairwise":
            figures = _pairwise(members, boot, brief=True)
            statistics["accuracy_mean_of_orders"] = figures.accuracy_mean_of_orders
            statistics["position_consistency"] = figures.position_consistency
        out.append(GroupFigures(group=group, items=len(members), statistics=statistics))
    return out


def _human(labelled: LabelledSet, np: Any, resamples: int, level: float,
           seed: int) -> dict[str, Statistic]:
    """How the humans agree with each other, where each human's label is kept."""
    rated = [item.ratings for item in labelled.items if item.ratings]
    if labelled.ratings_level is None or not rated or max(len(r) for r in rated) < 2:
        return {}
    width = max(len(r) for r in rated)
    if labelled.ratings_level == "nominal":
        space = sorted({str(v) for r in rated for v in r})
        codes = {v: i for i, v in enumerate(space)}
        table = np.array([[codes[str(v)] for v in r] + [np.nan] * (width - len(r))
                          for r in rated], dtype=float)
    else:
        table = np.array([[float(v) for v in r] + [np.nan] * (width - len(r)) for r in rated],
                         dtype=float)
    boot = Bootstrap(len(table), resamples=resamples, level=level, seed=seed)
    humans = Reliability(table, labelled.ratings_level)
    found = {"alpha": boot.estimate("alpha", humans.alpha, humans.alpha_batch)}
    if labelled.ratings_level == "nominal" and not np.isnan(table).any():
        k = len(space)
        columns = table.astype(int)
        for a in range(width):
            for b in range(a + 1, width):
                found[f"kappa, raters {a + 1} and {b + 1}"] = boot.estimate(
                    "kappa", *_kappa(columns[:, a], columns[:, b], k))
    return found
