"""Paired significance for run comparisons: is a difference between two runs more than noise?

Two runs of the same cases give one pair of values per case (the baseline's and the
candidate's). :func:`paired_compare` tests whether the candidate differs from the baseline:

- pass/fail pairs (every value 0 or 1): McNemar's test on the discordant pairs, exact (a
  two-sided binomial test with p = 0.5) under 25 of them, chi-squared with continuity
  correction from 25 up, and p = 1 when no pair changed;
- numeric pairs (scores, latencies): the Wilcoxon signed-rank test on the non-zero
  differences, exact up to 50 of them, normal approximation above, and a paired t-test beside
  it (NaN when every difference is the same: the t statistic has no spread to divide by).

Both report the mean difference (candidate minus baseline) with a BCa bootstrap confidence
interval (seed 0, 10,000 resamples; ``[d, d]`` when every difference is the same ``d``), and
Cohen's d_z. From :data:`NORMAL_INTERVAL_FROM` pairs on, the interval is the normal one (the
mean plus or minus z standard errors): there the bootstrap of a mean has converged to it, and
resampling would cost time and memory in proportion to the square of the pairs (10,000 cases:
a hundred million draws for each test). Under 6 pairs there is nothing to test (``insufficient_pairs``); under 10 a warning
says the result is fragile. The choices follow MLflow's ``compare_evaluations`` (Apache-2.0).

The exact binomial p-value is a few lines of arithmetic; the rest comes from SciPy, an optional
dependency (``pip install 'assay[stats]'``) imported only here and only when needed. Without it
McNemar still gets its exact p-value, and the other figures are left out with a warning rather
than guessed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MIN_PAIRS = 6
"""Fewer pairs than this cannot show a difference at the usual levels: not tested."""
WARN_PAIRS = 10
"""Fewer pairs than this are tested, with a warning that the result is fragile."""
EXACT_MCNEMAR_BELOW = 25
"""Discordant pairs below which McNemar's test is exact (binomial)."""
EXACT_WILCOXON_UP_TO = 50
"""Non-zero differences up to which the Wilcoxon test is exact."""
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
NORMAL_INTERVAL_FROM = 1000
"""Pairs from which a mean difference's interval is the normal one, not bootstrapped."""
STATS_EXTRA = "pip install 'assay[stats]'"

Method = Literal["mcnemar_exact", "mcnemar_chi2", "wilcoxon_exact", "wilcoxon_approx"]


class PairedComparison(BaseModel):
    """The outcome of a paired test of candidate against baseline values."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="null")

    status: Literal["ok", "insufficient_pairs"] = "ok"
    kind: Literal["binary", "numeric"]
    method: Method | None = None
    n_paired: int
    diff: float | None = Field(default=None, description="mean of candidate - baseline")
    ci_low: float | None = None
    ci_high: float | None = None
    confidence_level: float = 0.95
    p_value: float | None = None
    t_test_p_value: float | None = Field(
        default=None, description="a paired t-test beside the Wilcoxon test (numeric pairs); "
        "NaN when the differences have no spread")
    effect_size: float | None = Field(default=None, description="Cohen's d_z")
    regressed: int | None = Field(default=None, description="pairs that went 1 -> 0 (binary)")
    improved: int | None = Field(default=None, description="pairs that went 0 -> 1 (binary)")
    n_nonzero: int | None = None
    ties: int | None = Field(default=None, description="pairs with no difference")
    warnings: list[str] = Field(default_factory=list)
    alpha: float | None = Field(default=None, description="the level ``significant`` is at")
    significant: bool | None = Field(default=None, description="p_value < alpha, once a "
                                     "level is set with at_level; None before")

    def is_significant(self, alpha: float = 0.05) -> bool:
        """True when the test ran and its p-value is below ``alpha``."""
        return self.p_value is not None and not math.isnan(self.p_value) and \
            self.p_value < alpha

    def at_level(self, alpha: float) -> PairedComparison:
        """This result judged at significance level ``alpha``."""
        return self.model_copy(update={"alpha": alpha,
                                       "significant": self.is_significant(alpha)})


def paired_compare(baseline: Sequence[float | bool], candidate: Sequence[float | bool], *,
                   kind: Literal["auto", "binary", "numeric"] = "auto",
                   confidence_level: float = 0.95) -> PairedComparison:
    """Test whether ``candidate`` differs from ``baseline``, pair by pair (same order).

    ``kind`` "auto" treats the pairs as pass/fail when every value is 0 or 1 (booleans
    included), else as numbers. Raises ValueError when the sequences differ in length or hold
    something that is not a finite number.
    """
    if len(baseline) != len(candidate):
        raise ValueError(f"paired values differ in length: {len(baseline)} baseline, "
                         f"{len(candidate)} candidate")
    base = [_number(v, "baseline") for v in baseline]
    cand = [_number(v, "candidate") for v in candidate]
    if kind == "auto":
        kind = "binary" if all(v in (0.0, 1.0) for v in (*base, *cand)) else "numeric"
    diffs = [c - b for b, c in zip(base, cand, strict=True)]
    n = len(diffs)
    result = PairedComparison(kind=kind, n_paired=n, confidence_level=confidence_level,
                              diff=statistics.fmean(diffs) if diffs else None)
    if kind == "binary":
        result.regressed = sum(1 for b, c in zip(base, cand, strict=True) if b > c)
        result.improved = sum(1 for b, c in zip(base, cand, strict=True) if c > b)
    else:
        result.n_nonzero = sum(1 for d in diffs if d != 0)
    result.ties = sum(1 for d in diffs if d == 0)
    if n < MIN_PAIRS:
        result.status = "insufficient_pairs"
        result.warnings.append(f"only {n} pair(s): at least {MIN_PAIRS} are needed to test "
                               "a difference")
        return result
    if n < WARN_PAIRS:
        result.warnings.append(f"small sample: {n} pairs (results are fragile below "
                               f"{WARN_PAIRS})")
    if kind == "binary":
        _mcnemar(result)
    else:
        _wilcoxon(result, diffs)
    _interval(result, diffs)
    result.effect_size = _cohens_dz(diffs)
    return result


def mcnemar_exact_p(regressed: int, improved: int) -> float:
    """The exact two-sided McNemar p-value: a binomial test of the discordant pairs at 0.5."""
    n = regressed + improved
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(regressed, improved) + 1))
    return min(1.0, 2 * tail / 2 ** n)


def _mcnemar(result: PairedComparison) -> None:
    b, c = result.regressed or 0, result.improved or 0
    if b + c < EXACT_MCNEMAR_BELOW:
        result.method = "mcnemar_exact"
        result.p_value = mcnemar_exact_p(b, c)
        return
    result.method = "mcnemar_chi2"
    statistic = (abs(b - c) - 1) ** 2 / (b + c)
    result.p_value = math.erfc(math.sqrt(statistic / 2))  # chi-squared, 1 degree of freedom


def _wilcoxon(result: PairedComparison, diffs: list[float]) -> None:
    nonzero = [d for d in diffs if d != 0]
    exact = len(nonzero) <= EXACT_WILCOXON_UP_TO
    result.method = "wilcoxon_exact" if exact else "wilcoxon_approx"
    result.t_test_p_value = _t_test(diffs, result)
    if not nonzero:
        result.p_value = 1.0
        return
    stats = _scipy_stats(result, "the Wilcoxon p-value")
    if stats is None:
        return
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        test = stats.wilcoxon(nonzero, method="exact" if exact else "approx")
    result.p_value = float(test.pvalue)


def _t_test(diffs: list[float], result: PairedComparison) -> float | None:
    if len(set(diffs)) == 1:
        return math.nan
    stats = _scipy_stats(result, "the t-test p-value")
    if stats is None:
        return None
    return float(stats.ttest_1samp(diffs, 0.0).pvalue)


def _interval(result: PairedComparison, diffs: list[float]) -> None:
    if len(set(diffs)) == 1:
        result.ci_low = result.ci_high = diffs[0]
        return
    if len(diffs) >= NORMAL_INTERVAL_FROM:
        z = statistics.NormalDist().inv_cdf(0.5 + result.confidence_level / 2)
        half = z * statistics.stdev(diffs) / math.sqrt(len(diffs))
        mean = statistics.fmean(diffs)
        result.ci_low, result.ci_high = mean - half, mean + half
        return
    stats = _scipy_stats(result, "the confidence interval")
    if stats is None:
        return
    import warnings

    import numpy as np

    data = (np.asarray(diffs, dtype=float),)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = stats.bootstrap(data, np.mean, confidence_level=result.confidence_level,
                                n_resamples=BOOTSTRAP_RESAMPLES, method="BCa",
                                rng=np.random.default_rng(BOOTSTRAP_SEED))
        low, high = found.confidence_interval
        if math.isnan(low) or math.isnan(high):  # BCa breaks down on nearly constant data
            found = stats.bootstrap(data, np.mean, confidence_level=result.confidence_level,
                                    n_resamples=BOOTSTRAP_RESAMPLES, method="percentile",
                                    rng=np.random.default_rng(BOOTSTRAP_SEED))
            low, high = found.confidence_interval
            result.warnings.append("BCa interval undefined; percentile interval given")
    result.ci_low, result.ci_high = float(low), float(high)


def _cohens_dz(diffs: list[float]) -> float:
    spread = statistics.stdev(diffs) if len(diffs) > 1 else 0.0
    if spread == 0:
        return math.nan
    return statistics.fmean(diffs) / spread


def _scipy_stats(result: PairedComparison, what: str) -> Any:
    try:
        import scipy.stats as stats
    except ImportError:
        note = f"scipy is not installed ({STATS_EXTRA}): {what} is left out"
        if note not in result.warnings:
            result.warnings.append(note)
        return None
    return stats


def _number(value: float | bool, side: str) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{side} value {value!r} is not a finite number")
    return float(value)


__all__ = ["PairedComparison", "mcnemar_exact_p", "paired_compare"]
