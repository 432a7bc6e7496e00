"""Every calibration statistic against hand-computed values, against scipy, scikit-learn and
krippendorff on fixtures, in its batch form against its one-resample form, and on the
degenerate cases where it is undefined (one class only, perfect agreement, no variation)."""

from __future__ import annotations

import math
from types import ModuleType

import krippendorff
import numpy as np
import pytest

from assay.calibration.agreement import (
    TOO_FEW_ITEMS,
    Bootstrap,
    Reliability,
    Resamples,
    accuracy,
    batch_accuracy,
    batch_correlation,
    batch_kappa,
    batch_rates,
    batch_share,
    cohen_kappa,
    confusion,
    correlation,
    krippendorff_alpha,
    label_rates,
)


@pytest.fixture(scope="module")
def sklearn_metrics() -> ModuleType:
    """scikit-learn's metrics, the reference: imported (with SciPy, more than a second) only
    where these tests run, not in every test worker that collects this module."""
    import sklearn.metrics

    return sklearn.metrics


@pytest.fixture(scope="module")
def scipy_stats() -> ModuleType:
    import scipy.stats

    return scipy.stats


# -- hand-computed values -------------------------------------------------------------------


def codes(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([h for h, _ in pairs]), np.array([j for _, j in pairs])


def test_kappa_and_accuracy_by_hand():
    # 20 agree on 0, 15 agree on 1, 5 (human 0, judge 1), 10 (human 1, judge 0):
    # po = 35/50 = 0.7; margins human (25, 25), judge (30, 20): pe = (25*30 + 25*20)/2500
    # = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    human, judge = codes([(0, 0)] * 20 + [(1, 1)] * 15 + [(0, 1)] * 5 + [(1, 0)] * 10)
    assert accuracy(human, judge) == pytest.approx(0.7)
    assert cohen_kappa(human, judge, 2) == pytest.approx(0.4)
    assert confusion(human, judge, 2).tolist() == [[20, 5], [10, 15]]


def test_weighted_kappa_by_hand():
    # Three ordered labels, observed [[2, 1, 0], [0, 1, 1], [1, 0, 2]] (n = 8): the margins
    # are rows (3, 2, 3) and columns (3, 2, 3); expected = outer / 8. Quadratic weights
    # (i-j)^2: observed weighted disagreement = 1*1 + 1*1 + 1*4 = 6; expected =
    # sum w_ij r_i c_j / 8 = (1*(3*2 + 2*3 + 2*3 + 3*2) + 4*(3*3 + 3*3)) / 8 = 96/8 = 12;
    # kappa = 1 - 6/12 = 0.5. Linear weights |i-j|: observed 1 + 1 + 2 = 4; expected
    # (1*24 + 2*18) / 8 = 7.5; kappa = 1 - 4/7.5.
    pairs = [(0, 0)] * 2 + [(0, 1)] + [(1, 1)] + [(1, 2)] + [(2, 0)] + [(2, 2)] * 2
    human, judge = codes(pairs)
    assert cohen_kappa(human, judge, 3, "quadratic") == pytest.approx(0.5)
    assert cohen_kappa(human, judge, 3, "linear") == pytest.approx(1 - 4 / 7.5)


def test_krippendorff_alpha_by_hand():
    # Two raters, units (1,1), (1,2), (2,2), (2,2). Coincidences o11 = 2, o12 = o21 = 1,
    # o22 = 4; n1 = 3, n2 = 5, n = 8. Nominal alpha = 1 - (n-1) * (o12 + o21) /
    # (n1 n2 + n2 n1) = 1 - 7 * 2 / 30.
    data = [[1, 1], [1, 2], [2, 2], [2, 2]]
    assert krippendorff_alpha(data, "nominal") == pytest.approx(1 - 14 / 30)
    # Interval: the only disagreement is (1, 2), squared difference 1: observed 2 * 1;
    # expected sum over pairs n_c n_k (c-k)^2 = 2 * 3 * 5 * 1 = 30: the same 1 - 14/30.
    assert krippendorff_alpha(data, "interval") == pytest.approx(1 - 14 / 30)


def test_rank_correlations_by_hand():
    # No ties: d = (-1, 1, -1, 1, 0), sum d^2 = 4, rho = 1 - 6*4 / (5 * 24) = 0.8. Of the
    # 10 pairs, (1,2) and (3,4) are discordant: tau = (8 - 2) / 10 = 0.6.
    human = np.array([1.0, 2, 3, 4, 5])
    judge = np.array([2.0, 1, 4, 3, 5])
    assert correlation("spearman", human, judge) == pytest.approx(0.8)
    assert correlation("kendall", human, judge) == pytest.approx(0.6)
    assert correlation("pearson", human, judge) == pytest.approx(0.8)


def test_label_rates_by_hand():
    human, judge = codes([(0, 0)] * 3 + [(0, 1)] + [(1, 1)] * 2 + [(1, 0)] * 2)
    tpr, tnr = label_rates(human, judge, 0)
    assert tpr == pytest.approx(3 / 4)  # of 4 items labelled 0, the judge said 0 for 3
    assert tnr == pytest.approx(2 / 4)  # of 4 items not labelled 0, the judge avoided 0 twice


# -- against scipy, scikit-learn and krippendorff -------------------------------------------


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_matches_scikit_learn(seed, weights, sklearn_metrics):
    rng = np.random.default_rng(seed)
    human = rng.integers(0, 4, 80)
    judge = np.where(rng.random(80) < 0.5, human, rng.integers(0, 4, 80))
    expected = sklearn_metrics.cohen_kappa_score(human, judge, weights=weights,
                                                 labels=[0, 1, 2, 3])
    assert cohen_kappa(human, judge, 4, weights) == pytest.approx(expected)
    assert confusion(human, judge, 4).tolist() == sklearn_metrics.confusion_matrix(
        human, judge, labels=[0, 1, 2, 3]).tolist()


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_matches_the_krippendorff_package(seed, level):
    rng = np.random.default_rng(seed)
    data = rng.integers(1, 6, size=(50, 3)).astype(float)
    data[:, 1] = np.where(rng.random(50) < 0.6, data[:, 0], data[:, 1])
    data[rng.random((50, 3)) < 0.2] = np.nan  # missing ratings
    expected = krippendorff.alpha(reliability_data=data.T, level_of_measurement=level)
    assert krippendorff_alpha(data, level) == pytest.approx(expected, abs=1e-9)


def test_alpha_interval_on_continuous_values_matches_the_package():
    rng = np.random.default_rng(3)
    human = rng.random(60)
    judge = human + rng.normal(0, 0.2, 60)
    data = np.stack([human, judge], axis=1)
    expected = krippendorff.alpha(reliability_data=data.T, level_of_measurement="interval")
    assert krippendorff_alpha(data, "interval") == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_correlations_match_scipy(seed, scipy_stats):
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, 70).astype(float)  # ties, as real labels have
    judge = human + rng.normal(0, 1.5, 70)
    assert correlation("spearman", human, judge) == pytest.approx(
        scipy_stats.spearmanr(human, judge).statistic)
    assert correlation("kendall", human, judge) == pytest.approx(
        scipy_stats.kendalltau(human, judge).statistic)
    assert correlation("pearson", human, judge) == pytest.approx(
        scipy_stats.pearsonr(human, judge).statistic)


# -- the batch forms compute the same as one resample at a time ------------------------------


def _same(batch: np.ndarray, single: list[float | str]) -> None:
    assert len(batch) == len(single)
    for b, s in zip(batch, single, strict=True):
        if isinstance(s, str):
            assert math.isnan(b)
        else:
            assert b == pytest.approx(s)


def test_batch_forms_match_the_single_forms():
    rng = np.random.default_rng(7)
    human = rng.integers(0, 3, 40)
    judge = np.where(rng.random(40) < 0.6, human, rng.integers(0, 3, 40))
    draws = rng.integers(0, 40, size=(50, 40))
    sample = Resamples(draws)
    assert sample.weights.sum(axis=1).tolist() == [40.0] * 50
    assert sample.weights[0, 7] == (draws[0] == 7).sum()
    _same(batch_accuracy(human, judge, sample),
          [accuracy(human[d], judge[d]) for d in draws])
    for weights in (None, "quadratic"):
        _same(batch_kappa(human, judge, 3, sample, weights),
              [cohen_kappa(human[d], judge[d], 3, weights) for d in draws])
    for which in (0, 1):
        _same(batch_rates(human, judge, 2, sample)[which],
              [label_rates(human[d], judge[d], 2)[which] for d in draws])
    mask, hit = human > 0, human == judge
    _same(batch_share(mask, hit, sample),
          [float((mask[d] & hit[d]).sum()) / mask[d].sum() if mask[d].sum() else "none"
           for d in draws])
    for level in ("nominal", "ordinal", "interval"):
        table = np.stack([human, judge], axis=1).astype(float)
        rel = Reliability(table, level)  # type: ignore[arg-type]
        _same(rel.alpha_batch(sample), [rel.alpha(d) for d in draws])
        assert rel.alpha() == pytest.approx(krippendorff.alpha(
            reliability_data=table.T, level_of_measurement=level))
    values, scores = human.astype(float), judge + rng.random(40)
    for kind in ("spearman", "pearson"):
        _same(batch_correlation(kind, values, scores, sample),  # type: ignore[arg-type]
              [correlation(kind, values[d], scores[d]) for d in draws])  # type: ignore[arg-type]


# -- degenerate cases: a reason, never a crash or a misleading number ------------------------


def test_one_class_only_leaves_kappa_undefined_with_the_reason(sklearn_metrics):
    human = judge = np.zeros(10, dtype=int)
    found = cohen_kappa(human, judge, 2)
    assert isinstance(found, str) and "same single label" in found
    with pytest.warns(UserWarning):  # scikit-learn calls it undefined too, and says nan
        assert math.isnan(sklearn_metrics.cohen_kappa_score(human, judge, labels=[0, 1]))
    assert accuracy(human, judge) == 1.0
    assert "nothing to agree on" in str(krippendorff_alpha(np.stack([human, judge], 1)))
    assert math.isnan(batch_kappa(human, judge, 2, Resamples(np.zeros((3, 10), dtype=int)))[0])


def test_perfect_agreement_is_one_not_undefined(sklearn_metrics):
    human = judge = np.array([0, 1, 1, 0, 1])
    assert cohen_kappa(human, judge, 2) == 1.0
    assert krippendorff_alpha(np.stack([human, judge], 1)) == 1.0
    assert sklearn_metrics.cohen_kappa_score(human, judge) == 1.0


def test_a_constant_judge_against_varied_labels_is_kappa_zero_as_sklearn_says(sklearn_metrics):
    human = np.array([0, 1, 0, 1, 1])
    judge = np.zeros(5, dtype=int)
    assert cohen_kappa(human, judge, 2) == pytest.approx(0.0)
    assert sklearn_metrics.cohen_kappa_score(human, judge) == pytest.approx(0.0)


def test_correlations_with_a_constant_side_are_undefined():
    flat, varied = np.ones(6), np.arange(6.0)
    assert "judge gave every item the same score" in str(correlation("spearman", varied, flat))
    assert "every human label is the same" in str(correlation("kendall", flat, varied))
    assert "fewer than two" in str(correlation("pearson", np.ones(1), np.ones(1)))
    draws = Resamples(np.zeros((4, 6), dtype=int))
    assert np.isnan(batch_correlation("spearman", varied, varied, draws)).all()


def test_rates_of_a_label_nobody_used_are_undefined():
    human = judge = np.array([0, 0, 1])
    tpr, tnr = label_rates(human, judge, 2)
    assert isinstance(tpr, str) and "no item has this label" in tpr
    assert tnr == 1.0
    assert "every item" in str(label_rates(np.zeros(3, dtype=int), judge, 0)[1])


def test_alpha_without_two_ratings_per_item_is_undefined():
    assert "two ratings" in str(krippendorff_alpha([[1, None], [None, 2]]))


ONE_ITEM = "undefined: fewer than two items have two ratings to compare"


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_on_one_pairable_item_is_undefined_not_zero(level):
    """Its formula gives 0 on one item's ratings, whatever they are: that was reported."""
    assert krippendorff_alpha([[0, 1]], level) == ONE_ITEM
    assert krippendorff_alpha([[0, 1], [1, None], [None, 0]], level) == ONE_ITEM
    assert krippendorff_alpha([[0, 1], [1, 1]], level) == pytest.approx(0.0)  # two: a value


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_a_resample_of_one_pairable_item_has_no_alpha(level):
    """A resample that drew one item again and again gave a negative alpha, which went into
    the interval; now it is undefined there, in the batch form as in the single one."""
    rel = Reliability(np.array([[0, 1], [1, 1], [0, 0], [1, None]], dtype=float), level)
    draws = np.array([[0, 0, 0, 0], [1, 1, 3, 3], [0, 1, 2, 3], [2, 3, 0, 0]])
    single = [rel.alpha(d) for d in draws]
    assert single[:2] == [ONE_ITEM, ONE_ITEM] and not isinstance(single[2], str)
    _same(rel.alpha_batch(Resamples(draws)), single)
    found = Bootstrap(4, resamples=20, seed=0)
    found.draws = np.array([[0, 0, 0, 0]] * 12 + [[0, 1, 2, 3]] * 8)
    found.sample = Resamples(found.draws)
    stat = found.estimate("alpha", rel.alpha, rel.alpha_batch)
    assert stat.low is None and stat.note == "no interval: undefined in 12 of 20 resamples"
    one = Bootstrap(4, resamples=20, seed=0)
    only = Reliability(np.array([[0, 1], [1, None], [None, 0], [1, None]], dtype=float), level)
    assert np.isnan(only.alpha_batch(one.sample)).all()
    stat = one.estimate("alpha", only.alpha, only.alpha_batch)
    assert stat.value is None and stat.undefined == ONE_ITEM and stat.low is None


# -- the bootstrap ------------------------------------------------------------------------------


def test_bootstrap_interval_brackets_the_value_and_is_reproducible():
    rng = np.random.default_rng(0)
    human = rng.integers(0, 2, 200)
    judge = np.where(rng.random(200) < 0.8, human, 1 - human)

    def stat(i):
        return accuracy(human if i is None else human[i], judge if i is None else judge[i])

    first = Bootstrap(200, resamples=500, seed=1).estimate("accuracy", stat)
    again = Bootstrap(200, resamples=500, seed=1).estimate(
        "accuracy", stat, lambda sample: batch_accuracy(human, judge, sample))
    assert first.low is not None and first.high is not None
    assert first.low < first.value < first.high
    assert 0.05 < first.high - first.low < 0.2
    assert (first.low, first.high) == pytest.approx((again.low, again.high))  # loop == batch


def test_bootstrap_says_when_there_is_no_interval():
    human = np.array([0] * 29 + [1])  # one minority item: a third of resamples lack it
    judge = human.copy()

    def kappa(i):
        return cohen_kappa(human if i is None else human[i], judge if i is None else judge[i], 2)

    found = Bootstrap(30, resamples=200, seed=0).estimate("kappa", kappa)
    assert found.value == 1.0
    assert found.note and found.note.startswith("interval over the ")  # where defined
    rarely = Bootstrap(30, resamples=200, seed=0).estimate(
        "kappa", lambda i: 1.0 if i is None else "undefined: one class only")
    assert rarely.value == 1.0 and rarely.low is None
    assert rarely.note == "no interval: undefined in 200 of 200 resamples"
    off = Bootstrap(30, resamples=0).estimate("kappa", kappa)
    assert off.value == 1.0 and off.note == "no interval: bootstrap turned off"
    undefined = Bootstrap(3, resamples=10).estimate(
        "kappa", lambda i: cohen_kappa(np.zeros(3, dtype=int), np.zeros(3, dtype=int), 2))
    assert undefined.value is None and undefined.undefined and undefined.low is None


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_on_one_item_is_undefined_not_zero(weights):
    """One item's labels are its own marginals, so chance agreement equals what was seen and
    kappa read 0.000 (disagreeing) whatever the item; a resample that drew one item again and
    again did the same inside the interval. Both are undefined now."""
    assert cohen_kappa(np.array([0]), np.array([1]), 2, weights) == TOO_FEW_ITEMS
    assert not isinstance(cohen_kappa(np.array([0, 1]), np.array([1, 1]), 2, weights), str)
    human, judge = np.array([0, 1, 1, 0]), np.array([1, 1, 0, 0])
    draws = np.array([[0, 0, 0, 0], [0, 1, 2, 3], [2, 2, 2, 2]])
    found = batch_kappa(human, judge, 2, Resamples(draws), weights)
    assert np.isnan(found[0]) and np.isnan(found[2]) and not np.isnan(found[1])
