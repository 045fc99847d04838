"""Statistics for speedrun reproductions and records: summaries of a few seeds and a one-sided Welch test.

A reproduction is N seeds of one submission at one SHA (N is small: 3 by default), so the interval uses
Student's t with N-1 degrees of freedom, not the normal approximation. A record is accepted when its seeds are
lower (better BPB) than the current record's seeds with a one-sided Welch t-test (unequal variances), the test
modded-nanogpt's record rule asks for (p < 0.01). The t distribution is computed here (the regularized incomplete
beta function by Lentz's continued fraction, as in Numerical Recipes §6.4; the quantile by bisection), checked
against scipy in the tests: importing ``scipy.stats`` takes seconds, more than the site build may spend.

Degenerate cases have defined answers instead of NaNs: one seed has std 0 and no interval (``ci_low`` =
``ci_high`` = the value, ``n`` says why); two samples with zero variance give p = 0 when the candidate is
strictly lower and 1 otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

from pydantic import BaseModel, ConfigDict


def _betacf(a: float, b: float, x: float) -> float:
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom (df may be fractional: Welch)."""
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@lru_cache(maxsize=256)
def t_ppf(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t (bisection on :func:`t_cdf` to 1e-12)."""
    if not 0.0 < p < 1.0:
        raise ValueError("t_ppf: p must be in (0, 1)")
    lo, hi = -1.0, 1.0
    while t_cdf(lo, df) > p:
        lo *= 2
    while t_cdf(hi, df) < p:
        hi *= 2
    while hi - lo > 1e-12 * max(1.0, abs(hi)):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2


class Summary(BaseModel):
    """Mean, sample standard deviation and a two-sided t confidence interval of the mean."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int
    mean: float
    std: float
    ci_low: float
    ci_high: float
    confidence: float = 0.95

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2


def summarize(values: Sequence[float], confidence: float = 0.95) -> Summary:
    """Summary of ``values`` (at least one, all finite)."""
    xs = [float(v) for v in values]
    if not xs:
        raise ValueError("summarize: no values")
    if not all(math.isfinite(x) for x in xs):
        raise ValueError("summarize: values must be finite")
    n = len(xs)
    mean = math.fsum(xs) / n
    if n == 1:
        return Summary(n=1, mean=mean, std=0.0, ci_low=mean, ci_high=mean, confidence=confidence)
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_ppf(0.5 + confidence / 2, n - 1) * std / math.sqrt(n)
    return Summary(n=n, mean=mean, std=std, ci_low=mean - half, ci_high=mean + half, confidence=confidence)


def welch_less(candidate: Sequence[float], reference: Sequence[float]) -> float:
    """One-sided Welch t-test p-value for H1: mean(candidate) < mean(reference).

    Needs at least two values on each side (a single seed has no variance to test against)."""
    a, b = summarize(candidate), summarize(reference)
    if a.n < 2 or b.n < 2:
        raise ValueError("welch_less: needs at least 2 seeds on each side")
    va, vb = a.std**2 / a.n, b.std**2 / b.n
    diff = a.mean - b.mean
    if va + vb == 0.0:
        return 0.0 if diff < 0 else 1.0
    tstat = diff / math.sqrt(va + vb)
    # Welch–Satterthwaite degrees of freedom.
    df = (va + vb) ** 2 / ((va**2 / (a.n - 1) if va else 0.0) + (vb**2 / (b.n - 1) if vb else 0.0))
    return t_cdf(tstat, df)
