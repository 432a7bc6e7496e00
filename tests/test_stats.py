"""Paired significance (acceptance test D-17): McNemar exact, Wilcoxon exact, the bootstrap
interval and too few pairs, with p-values worked out by hand from the binomial."""

from __future__ import annotations

import math

import pytest

from assay.analysis.significance import mcnemar_exact_p, paired_compare


def test_d17a_mcnemar_exact_on_pass_fail_pairs():
    result = paired_compare([1, 1, 1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 0, 1, 0, 1])
    assert result.method == "mcnemar_exact" and result.kind == "binary"
    assert (result.regressed, result.improved) == (5, 1)
    assert result.p_value == 14 / 64 == 0.21875  # 2 * (C(6,0) + C(6,1)) / 2^6
    assert result.diff == -0.5
    assert any("small sample" in w for w in result.warnings)


def test_d17b_all_improved():
    result = paired_compare([0] * 6, [1] * 6)
    assert result.p_value == 2 / 64 == 0.03125
    assert result.diff == 1.0 and (result.ci_low, result.ci_high) == (1.0, 1.0)


def test_d17c_wilcoxon_exact_on_numbers():
    result = paired_compare([50.0, 60, 70, 80, 90, 40], [60.0, 70, 80, 90, 100, 50])
    assert result.method == "wilcoxon_exact" and result.kind == "numeric"
    assert result.p_value == pytest.approx(0.03125, abs=1e-12)
    assert (result.ci_low, result.ci_high) == (10.0, 10.0)
    assert math.isnan(result.t_test_p_value)  # constant differences: no spread


def test_d17d_too_few_pairs():
    result = paired_compare([1, 0, 1, 0, 1], [0, 0, 0, 0, 0])
    assert result.status == "insufficient_pairs" and result.p_value is None
    assert not result.is_significant()


def test_d17e_identical_pairs():
    assert paired_compare([1, 0, 1, 1, 0, 1, 1, 0], [1, 0, 1, 1, 0, 1, 1, 0]).p_value == 1.0
    assert paired_compare([3.0] * 8, [3.0] * 8).p_value == 1.0


def test_chi_squared_from_25_discordant_pairs_and_a_real_interval():
    base, cand = [1] * 30 + [0] * 10, [0] * 30 + [0] * 5 + [1] * 5
    result = paired_compare(base, cand)
    assert result.method == "mcnemar_chi2"
    assert result.p_value == pytest.approx(math.erfc(math.sqrt(((30 - 5) - 1) ** 2 / 35 / 2)))
    assert result.ci_low is not None and result.ci_low < result.diff < result.ci_high
    assert mcnemar_exact_p(0, 0) == 1.0


def test_significance_at_a_level():
    result = paired_compare([0] * 6, [1] * 6).at_level(0.05)
    assert result.significant is True and result.alpha == 0.05
    assert paired_compare([0] * 6, [1] * 6).at_level(0.01).significant is False


@pytest.mark.parametrize(("base", "cand"), [([1.0], [1.0, 2.0]), ([float("nan")], [1.0]),
                                            (["x"], [1.0])])
def test_bad_pairs_are_refused(base, cand):
    with pytest.raises(ValueError):
        paired_compare(base, cand)


def test_a_large_sample_gets_the_normal_interval_at_once():
    """10,000 pairs: the bootstrap would draw a hundred million values per test (seconds and
    gigabytes); the normal interval is what it converges to, and takes no time."""
    import random
    import statistics
    import time

    rng = random.Random(1)
    base = [rng.random() for _ in range(10_000)]
    cand = [b + rng.gauss(0.01, 0.2) for b in base]
    started = time.perf_counter()
    result = paired_compare(base, cand)
    assert time.perf_counter() - started < 2.0
    diffs = [c - b for b, c in zip(base, cand, strict=True)]
    half = 1.959963984540054 * statistics.stdev(diffs) / math.sqrt(len(diffs))
    assert result.ci_low == pytest.approx(result.diff - half)
    assert result.ci_high == pytest.approx(result.diff + half)
