"""Scaling fits: ``bpb = a * flops^(-b) + c`` per group, with R² and a projection at a budget.

The fit is the React site's ``computePowerLawWithOffset`` (marin.md §2.8) done without an optimiser library:
for a fixed asymptote ``c`` the model is linear in log space (``log(bpb - c) = log a - b log flops``), so
we scan ``c`` over ``[0, min(bpb))``, solve the line by least squares, and keep the ``c`` with the smallest
squared error in BPB space, refined by a golden-section search around the best grid point. Deterministic,
and a few hundred microseconds per group.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict


class ScalingFit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    a: float
    b: float
    c: float
    r2: float
    n: int

    def predict(self, flops: float) -> float:
        return self.a * flops ** (-self.b) + self.c


def _line_fit(lx: np.ndarray, y: np.ndarray, c: float) -> tuple[float, float, float]:
    """For asymptote c: (log a, b, SSE in BPB space) of the least-squares line in log space."""
    ly = np.log(y - c)
    slope, intercept = np.polyfit(lx, ly, 1)
    pred = np.exp(intercept + slope * lx) + c
    return float(intercept), float(-slope), float(np.sum((pred - y) ** 2))


def fit_power_law(flops: Sequence[float], bpb: Sequence[float]) -> ScalingFit | None:
    """Fit ``bpb = a * flops^(-b) + c`` (c >= 0). None when fewer than 3 distinct FLOPs values."""
    x = np.asarray(flops, dtype=float)
    y = np.asarray(bpb, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    x, y = x[ok], y[ok]
    if len(np.unique(x)) < 3:
        return None
    # Scale x by its geometric mean so log a stays moderate; convert back at the end.
    lx0 = float(np.mean(np.log(x)))
    lx = np.log(x) - lx0
    top = float(y.min()) * (1 - 1e-6)
    grid = np.linspace(0.0, top, 64)
    errs = [_line_fit(lx, y, c)[2] for c in grid]
    k = int(np.argmin(errs))
    lo, hi = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
    phi = (math.sqrt(5) - 1) / 2
    for _ in range(40):
        m1, m2 = hi - phi * (hi - lo), lo + phi * (hi - lo)
        if _line_fit(lx, y, m1)[2] <= _line_fit(lx, y, m2)[2]:
            hi = m2
        else:
            lo = m1
    c = (lo + hi) / 2
    log_a, b, sse = _line_fit(lx, y, c)
    sst = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - sse / sst if sst > 0 else 1.0
    a = math.exp(log_a + b * lx0)
    return ScalingFit(a=a, b=b, c=float(c), r2=r2, n=len(x))
