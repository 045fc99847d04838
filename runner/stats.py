"""Statistics for speedrun reproductions and records: summaries of a few seeds and a one-sided Welch test.

A reproduction is N seeds of one submission at one SHA (N is small: 3 by default), so the interval uses
Student's t with N-1 degrees of freedom, not the normal approximation. A record is accepted when its seeds are
lower (better BPB) than the current record's seeds with a one-sided Welch t-test (unequal variances), the test
modded-nanogpt's record rule asks for (p < 0.01). The t distribution comes from scipy, a dependency of JAX.

Degenerate cases have defined answers instead of NaNs: one seed has std 0 and no interval (``ci_low`` =
``ci_high`` = the value, ``n`` says why); two samples with zero variance give p = 0 when the candidate is
strictly lower and 1 otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict


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
    from scipy.stats import t

    half = float(t.ppf(0.5 + confidence / 2, n - 1)) * std / math.sqrt(n)
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
    from scipy.stats import t

    return float(t.cdf(tstat, df))
