"""Agreement statistics, each with a bootstrap confidence interval, and an honest "undefined".

Every statistic is a function of resampled item indices that returns a number, or a sentence
saying why there is none (one class only, no variation, nothing to compare): a degenerate
case is never a crash and never a misleading number. :class:`Bootstrap` draws one set of
resamples per calibration (seeded, so a report is reproducible) and :meth:`Bootstrap.estimate`
turns a statistic into a :class:`Statistic`: the value on all items and the percentile
interval over the resamples where the statistic is defined. When it is undefined in more
than half of them, there is no interval and the note says so.

Formulas (``O`` the confusion matrix of human rows by judge columns over ``n`` items, ``E``
the outer product of its margins over ``n``, ``w`` disagreement weights):

- Cohen's kappa: ``1 - sum(w*O) / sum(w*E)`` with ``w = 1`` off the diagonal; weighted kappa
  uses ``w = (i-j)^2`` (quadratic) or ``|i-j|`` (linear) over the ordered scale. Undefined
  when ``sum(w*E) = 0`` (both raters gave the same single label to every item).
- Krippendorff's alpha: ``1 - (n-1) * sum(o_ck d_ck) / sum(n_c n_k d_ck)`` over the
  coincidence matrix ``o`` of pairable values (any number of raters, missing values allowed),
  with ``d`` nominal (0/1), ordinal (cumulative ranks) or interval (squared difference).
  Undefined when fewer than two items have two ratings (one item's ratings give 0, or a
  resample's one item repeated a negative figure: neither says anything of agreement), or
  when the pairable values do not vary.
- Spearman's rho, Kendall's tau-b and Pearson's r come from scipy; undefined when either side
  is constant.

numpy and scipy are imported only here, and only when a calibration computes statistics
(``pip install 'assay[stats]'``); nothing on the path of a run needs them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from assay.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

Value = float | str
"""A statistic's value, or the reason it has none."""
Level = Literal["nominal", "ordinal", "interval"]
Weights = Literal["linear", "quadratic"]


def numpy() -> Any:
    """numpy, or a clear error naming the extra that installs it."""
    try:
        import numpy as np
        import scipy.stats  # noqa: F401
    except ImportError:
        raise ConfigError("calibration statistics need numpy and scipy: "
                          "pip install 'assay[stats]'", code="missing_extra") from None
    return np


class Statistic(BaseModel):
    """One figure: its value on all items and its bootstrap interval, or why it has none."""

    model_config = ConfigDict(extra="forbid")

    name: str
    value: float | None
    low: float | None = None
    high: float | None = None
    n: int = 0
    undefined: str | None = None
    """Why there is no value (the statistic is undefined on these items)."""
    note: str | None = None
    """What a reader must know about the interval (resamples where it was undefined)."""

    @property
    def defined(self) -> bool:
        return self.value is not None


class Resamples:
    """The resamples of a bootstrap: item indices (resamples x n), and how often each item
    occurs in each resample (resamples x n). Counts turn most statistics of every resample
    into one matrix product: a share is ``weights @ hits / weights @ members``."""

    def __init__(self, draws: np.ndarray, n: int | None = None) -> None:
        self.draws = draws
        self.n = draws.shape[1] if n is None else n
        self._weights: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.draws)

    @property
    def weights(self) -> np.ndarray:
        if self._weights is None:
            np = numpy()
            count = len(self.draws)
            offsets = self.draws + (np.arange(count) * self.n)[:, None]
            self._weights = np.bincount(offsets.ravel(), minlength=count * self.n).reshape(
                count, self.n).astype(float)
        return self._weights


class Bootstrap:
    """Seeded percentile bootstrap over items: one set of resamples for every statistic of
    a calibration, so that their intervals are comparable."""

    def __init__(self, n: int, resamples: int = 1000, level: float = 0.95,
                 seed: int = 0) -> None:
        np = numpy()
        if not 0 < level < 1:
            raise ConfigError(f"confidence level {level}: expected a number between 0 and 1")
        self.n = n
        self.resamples = resamples
        self.level = level
        self.seed = seed
        rng = np.random.default_rng(seed)
        self.draws = rng.integers(0, n, size=(resamples, n)) if n and resamples \
            else np.zeros((0, n), dtype=int)
        self.sample = Resamples(self.draws, n)

    def estimate(self, name: str, statistic: Callable[[Any], Value],
                 batch: Callable[[Any], Any] | None = None, n: int | None = None) -> Statistic:
        """``statistic(indices)`` on all items (``indices`` None) and on every resample.

        ``batch(resamples)``, when given, computes the statistic for every resample at once
        (an array with NaN where it is undefined, from :class:`Resamples`): the same figures,
        without a Python loop over the resamples.
        """
        np = numpy()
        count = self.n if n is None else n
        full = statistic(None)
        if isinstance(full, str):
            return Statistic(name=name, value=None, n=count, undefined=full)
        if not self.resamples:
            return Statistic(name=name, value=_clean(full), n=count,
                             note="no interval: bootstrap turned off")
        if batch is not None:
            found = np.asarray(batch(self.sample), dtype=float)
            values = found[~np.isnan(found)]
        else:
            values = np.asarray([v for v in (statistic(d) for d in self.draws)
                                 if not isinstance(v, str)], dtype=float)
        missing = len(self.draws) - len(values)
        if len(values) * 2 < len(self.draws):
            return Statistic(name=name, value=_clean(full), n=count,
                             note=f"no interval: undefined in {missing} of "
                             f"{len(self.draws)} resamples")
        tail = (1 - self.level) / 2
        low, high = _quantiles(np.sort(values), (tail, 1 - tail))
        note = (f"interval over the {len(values)} of {len(self.draws)} resamples where it is "
                "defined") if missing else None
        return Statistic(name=name, value=_clean(full), low=_clean(float(low)),
                         high=_clean(float(high)), n=count, note=note)


def _quantiles(ordered: np.ndarray, levels: tuple[float, float]) -> tuple[float, float]:
    """Quantiles of sorted values, interpolated linearly (numpy's default method), without
    numpy.percentile's per-call overhead (it showed in profiles: a calibration computes
    about a hundred intervals)."""
    last = len(ordered) - 1
    found = []
    for level in levels:
        position = level * last
        below = int(position)
        above = min(below + 1, last)
        fraction = position - below
        found.append(float(ordered[below] + (ordered[above] - ordered[below]) * fraction))
    return found[0], found[1]


def _clean(value: float) -> float:
    """Round away float noise (1e-16 where 0 is meant) so that reports read cleanly."""
    rounded = round(float(value), 12)
    return 0.0 if rounded == 0 else rounded


def pick(array: np.ndarray, indices: np.ndarray | None) -> np.ndarray:
    return array if indices is None else array[indices]


# -- categorical agreement ------------------------------------------------------------------


def confusion(human: np.ndarray, judge: np.ndarray, k: int) -> np.ndarray:
    """Counts of (human label, judge label) pairs: rows are the human's, columns the judge's."""
    np = numpy()
    return np.bincount(human * k + judge, minlength=k * k).reshape(k, k)


def accuracy(human: np.ndarray, judge: np.ndarray) -> Value:
    if len(human) == 0:
        return "no items"
    return float((human == judge).mean())


TOO_FEW_ITEMS = "undefined: fewer than two items to compare"
"""Why kappa has no value on one item: its marginals are that item's own labels, so chance
agreement equals what was observed and the formula gives 0 (or nothing), whatever the item."""


def cohen_kappa(human: np.ndarray, judge: np.ndarray, k: int,
                weights: Weights | None = None) -> Value:
    """Cohen's kappa of two raters over ``k`` ordered labels (codes 0..k-1)."""
    np = numpy()
    if len(human) == 0:
        return "no items"
    if len(human) < 2:
        return TOO_FEW_ITEMS
    observed = confusion(human, judge, k).astype(float)
    total = observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / total
    index = np.arange(k)
    distance = np.abs(index[:, None] - index[None, :]).astype(float)
    w = (distance > 0).astype(float) if weights is None else \
        distance if weights == "linear" else distance ** 2
    chance = float((w * expected).sum())
    if chance == 0:
        used = sorted({int(v) for v in np.concatenate([human, judge])})
        return ("undefined: the judge and the humans gave the same single label to every "
                "item, so chance agreement is complete" if len(used) == 1 else
                "undefined: no disagreement is possible by chance")
    return 1.0 - float((w * observed).sum()) / chance


def label_rates(human: np.ndarray, judge: np.ndarray, code: int) -> tuple[Value, Value]:
    """The true-positive rate (of items the humans gave ``code``, the share the judge gave it
    too) and the true-negative rate (of the other items, the share the judge did not)."""
    positive = human == code
    tp = int((positive & (judge == code)).sum())
    tn = int((~positive & (judge != code)).sum())
    npos, nneg = int(positive.sum()), int((~positive).sum())
    tpr: Value = tp / npos if npos else "undefined: no item has this label"
    tnr: Value = tn / nneg if nneg else "undefined: every item has this label"
    return tpr, tnr


def ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, NaN where the denominator is 0 (undefined, not 0)."""
    np = numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1),
                        np.nan)


def confusions(human: np.ndarray, judge: np.ndarray, k: int,
               sample: Resamples) -> np.ndarray:
    """The confusion matrix of every resample (resamples x k x k)."""
    np = numpy()
    cells = np.zeros((len(human), k * k))
    cells[np.arange(len(human)), human * k + judge] = 1.0
    return (sample.weights @ cells).reshape(len(sample), k, k)


def batch_accuracy(human: np.ndarray, judge: np.ndarray, sample: Resamples) -> np.ndarray:
    """Agreement in every resample."""
    return ratio(sample.weights @ (human == judge).astype(float), sample.weights.sum(axis=1))


def batch_kappa(human: np.ndarray, judge: np.ndarray, k: int, sample: Resamples,
                weights: Weights | None = None) -> np.ndarray:
    """Cohen's kappa of every resample (NaN where undefined)."""
    np = numpy()
    observed = confusions(human, judge, k, sample)
    total = observed.sum(axis=(1, 2))
    expected = observed.sum(axis=2)[:, :, None] * observed.sum(axis=1)[:, None, :] / \
        np.where(total > 0, total, 1)[:, None, None]
    index = np.arange(k)
    distance = np.abs(index[:, None] - index[None, :]).astype(float)
    w = (distance > 0).astype(float) if weights is None else \
        distance if weights == "linear" else distance ** 2
    chance = (w * expected).sum(axis=(1, 2))
    # a resample of one item drawn again and again says nothing, as one item does not
    chance = np.where((chance > 1e-12) & ((sample.weights > 0).sum(axis=1) >= 2), chance, 0.0)
    return 1.0 - ratio((w * observed).sum(axis=(1, 2)), chance)


def batch_rates(human: np.ndarray, judge: np.ndarray, code: int,
                sample: Resamples) -> tuple[np.ndarray, np.ndarray]:
    """The true-positive and true-negative rates of ``code`` in every resample."""
    h, j = human == code, judge == code
    w = sample.weights
    return (ratio(w @ (h & j).astype(float), w @ h.astype(float)),
            ratio(w @ (~h & ~j).astype(float), w @ (~h).astype(float)))


def batch_share(mask: np.ndarray, hit: np.ndarray, sample: Resamples) -> np.ndarray:
    """Of the items in ``mask``, the share that ``hit``, in every resample."""
    w = sample.weights
    return ratio(w @ (mask & hit).astype(float), w @ mask.astype(float))


# -- Krippendorff's alpha -------------------------------------------------------------------

TOO_FEW_UNITS = "undefined: fewer than two items have two ratings to compare"
"""Why alpha has no value on one pairable item (or none): its formula gives 0 there (or, on
one item counted several times, a negative number), which says nothing of agreement."""


class Reliability:
    """Ratings of units by raters (a units x raters array, NaN where a rater gave none),
    prepared once so that alpha over any resample of units costs little. A unit with fewer
    than two ratings has nothing to compare and contributes nothing."""

    def __init__(self, data: Sequence[Sequence[float | None]] | np.ndarray,
                 level: Level) -> None:
        np = numpy()
        matrix = data.astype(float) if isinstance(data, np.ndarray) else np.array(
            [[math.nan if v is None else float(v) for v in row] for row in data], dtype=float)
        if matrix.ndim != 2:
            raise ValueError("reliability data must be units x raters")
        self.level = level
        counts = (~np.isnan(matrix)).sum(axis=1)
        pairable = counts >= 2
        matrix = np.where(pairable[:, None], matrix, np.nan)
        counts = np.where(pairable, counts, 0)
        self.units = int(pairable.sum())
        self.m = counts.astype(float)
        divisor = np.maximum(counts - 1, 1).astype(float)
        if level == "interval":
            filled = np.nan_to_num(matrix)
            self.s1 = filled.sum(axis=1)
            self.s2 = (filled ** 2).sum(axis=1)
            # Within a unit, the sum over ordered pairs of (v - v')^2 is 2 (m s2 - s1^2).
            self.within = 2 * (counts * self.s2 - self.s1 ** 2) / divisor
            return
        values = np.unique(matrix[~np.isnan(matrix)])
        k = len(values)
        self.k = k
        coded = np.where(np.isnan(matrix), -1,
                         np.searchsorted(values, np.nan_to_num(matrix))) if k else \
            np.full(matrix.shape, -1)
        per_unit = np.zeros((len(matrix), k), dtype=float)
        for column in coded.T:
            ok = column >= 0
            per_unit[np.nonzero(ok)[0], column[ok]] += 1
        # Unit u adds (n_uc n_uk - [c == k] n_uc) / (m_u - 1) to o_ck.
        outer = per_unit[:, :, None] * per_unit[:, None, :]
        outer[:, np.arange(k), np.arange(k)] -= per_unit
        self.coincidence = (outer / divisor[:, None, None]).reshape(len(matrix), k * k)

    def alpha(self, indices: np.ndarray | None = None) -> Value:
        """Krippendorff's alpha over the units (a resample of unit indices, or all)."""
        np = numpy()
        if self.units < 2:
            return TOO_FEW_UNITS
        size = len(self.m)
        weights = np.ones(size) if indices is None else \
            np.bincount(indices, minlength=size).astype(float)
        if int(np.count_nonzero((weights > 0) & (self.m > 0))) < 2:
            return TOO_FEW_UNITS
        if self.level == "interval":
            n = float(weights @ self.m)
            s1, s2 = float(weights @ self.s1), float(weights @ self.s2)
            expected = 2 * n * s2 - 2 * s1 * s1
            if expected <= 1e-12 * max(1.0, n * s2):
                return "undefined: every rating is the same, so there is nothing to agree on"
            return 1.0 - (n - 1) * float(weights @ self.within) / expected
        observed = (weights @ self.coincidence).reshape(self.k, self.k)
        margins = observed.sum(axis=1)
        n = float(margins.sum())
        distance = self._distance(margins)
        expected = float((np.outer(margins, margins) * distance).sum())
        if expected <= 1e-12:
            return "undefined: every rating is the same, so there is nothing to agree on"
        return 1.0 - (n - 1) * float((observed * distance).sum()) / expected

    def alpha_batch(self, sample: Resamples) -> np.ndarray:
        """Alpha of every resample of units (NaN where undefined, as :meth:`alpha` says)."""
        np = numpy()
        if self.units < 2:
            return np.full(len(sample), np.nan)
        found = self._alpha_batch(sample)
        distinct = np.count_nonzero((sample.weights > 0) & (self.m > 0), axis=1)
        return np.where(distinct >= 2, found, np.nan)

    def _alpha_batch(self, sample: Resamples) -> np.ndarray:
        np = numpy()
        weights = sample.weights
        if self.level == "interval":
            n = weights @ self.m
            s1, s2 = weights @ self.s1, weights @ self.s2
            expected = 2 * n * s2 - 2 * s1 * s1
            expected = np.where(expected > 1e-12 * np.maximum(1.0, n * s2), expected, 0.0)
            return 1.0 - ratio((n - 1) * (weights @ self.within), expected)
        k = self.k
        observed = (weights @ self.coincidence).reshape(len(sample), k, k)
        margins = observed.sum(axis=2)
        n = margins.sum(axis=1)
        if self.level == "nominal":
            distance = np.broadcast_to(1.0 - np.eye(k), observed.shape)
        else:
            cumulative = np.concatenate([np.zeros((len(sample), 1)),
                                         np.cumsum(margins, axis=1)], axis=1)
            low = np.minimum.outer(np.arange(k), np.arange(k))
            high = np.maximum.outer(np.arange(k), np.arange(k))
            distance = (cumulative[:, high + 1] - cumulative[:, low]
                        - (margins[:, low] + margins[:, high]) / 2) ** 2
        expected = (margins[:, :, None] * margins[:, None, :] * distance).sum(axis=(1, 2))
        expected = np.where(expected > 1e-12, expected, 0.0)
        return 1.0 - ratio((n - 1) * (observed * distance).sum(axis=(1, 2)), expected)

    def _distance(self, margins: np.ndarray) -> np.ndarray:
        np = numpy()
        k = self.k
        if self.level == "nominal":
            return 1.0 - np.eye(k)
        # Ordinal: the squared count of values between c and k, halving the end points.
        cumulative = np.concatenate([[0.0], np.cumsum(margins)])
        low = np.minimum.outer(np.arange(k), np.arange(k))
        high = np.maximum.outer(np.arange(k), np.arange(k))
        between = cumulative[high + 1] - cumulative[low] - (margins[low] + margins[high]) / 2
        return between ** 2


def krippendorff_alpha(data: Sequence[Sequence[float | None]] | np.ndarray,
                       level: Level = "nominal") -> Value:
    """Krippendorff's alpha of a units x raters table (None or NaN: no rating)."""
    return Reliability(data, level).alpha()


# -- correlation ----------------------------------------------------------------------------


def correlation(kind: Literal["spearman", "kendall", "pearson"], human: np.ndarray,
                judge: np.ndarray) -> Value:
    """Spearman's rho, Kendall's tau-b or Pearson's r; undefined for constant input."""
    np = numpy()
    import scipy.stats

    if len(human) < 2:
        return "undefined: fewer than two items"
    if np.all(human == human[0]):
        return "undefined: every human label is the same"
    if np.all(judge == judge[0]):
        return "undefined: the judge gave every item the same score"
    if kind == "spearman":
        value = scipy.stats.spearmanr(human, judge).statistic
    elif kind == "kendall":
        value = scipy.stats.kendalltau(human, judge).statistic
    else:
        value = scipy.stats.pearsonr(human, judge).statistic
    value = float(value)
    return value if math.isfinite(value) else "undefined: not a number on these items"


def batch_correlation(kind: Literal["spearman", "kendall", "pearson"], human: np.ndarray,
                      judge: np.ndarray, sample: Resamples) -> np.ndarray | None:
    """Spearman's rho or Pearson's r of every resample (NaN where a side is constant);
    None for Kendall's tau, which is computed resample by resample."""
    np = numpy()
    import scipy.stats

    if kind == "kendall":
        return None
    x, y = human[sample.draws].astype(float), judge[sample.draws].astype(float)
    if kind == "spearman":
        x = scipy.stats.rankdata(x, axis=1)
        y = scipy.stats.rankdata(y, axis=1)
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    spread = np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
    spread = np.where(spread > 1e-12, spread, 0.0)
    return ratio((x * y).sum(axis=1), spread)
