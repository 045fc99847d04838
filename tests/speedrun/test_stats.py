"""runner.stats against hand-worked values and scipy's own Welch test."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sp

from runner.stats import summarize, welch_less


def test_summary_by_hand() -> None:
    s = summarize([1.0, 2.0, 3.0])
    # mean 2, sample std 1, t(0.975, df=2) = 4.302652729749464, half-width = t * 1 / sqrt(3)
    assert (s.n, s.mean, s.std) == (3, 2.0, 1.0)
    assert s.half_width == pytest.approx(4.302652729749464 / math.sqrt(3), rel=1e-12)
    assert (s.ci_low, s.ci_high) == pytest.approx((2 - 2.4841377117503, 2 + 2.4841377118), rel=1e-9)


def test_single_seed_has_no_interval() -> None:
    s = summarize([3.5])
    assert (s.n, s.std, s.ci_low, s.ci_high) == (1, 0.0, 3.5, 3.5)
    with pytest.raises(ValueError, match="at least 2 seeds"):
        welch_less([3.5], [4.0, 4.1])
    with pytest.raises(ValueError, match="no values"):
        summarize([])


def test_welch_by_hand_and_against_scipy() -> None:
    # a = [1,2,3], b = [4,5,6]: t = -3 / sqrt(2/3) = -3.674, Welch df = 4, one-sided p = 0.0106558
    assert welch_less([1, 2, 3], [4, 5, 6]) == pytest.approx(0.0106558, abs=1e-6)
    for a, b in [([3.10, 3.12, 3.11], [3.20, 3.19, 3.23, 3.21]), ([2.0, 2.5, 2.2], [2.1, 2.05])]:
        want = sp.ttest_ind(a, b, equal_var=False, alternative="less").pvalue
        assert welch_less(a, b) == pytest.approx(want, rel=1e-9)
    assert welch_less([4, 5, 6], [1, 2, 3]) > 0.98


def test_zero_variance_is_decided_not_nan() -> None:
    assert welch_less([1.0, 1.0], [2.0, 2.0]) == 0.0
    assert welch_less([2.0, 2.0], [2.0, 2.0]) == 1.0
