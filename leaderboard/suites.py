"""Scaling suites on the site: one method at several budgets (``runner.speedrun.speedrun_suite``), fitted and ranked.

A suite member's run is named ``<method>__<member>``; the members of a method are fitted with the leaderboard's
power law (:func:`leaderboard.scaling.fit_power_law`, ``bpb = a * flops^-b + c``, vectorised across methods
by :func:`fit_many`). The *slope* is ``b``; the
*projection* is the fit's BPB at the reference budget. Uncertainty: with the asymptote ``c`` held at its fitted
value the model is a straight line in log space, so the slope's standard error and the projection's 95% interval
come from that line's least-squares covariance (Student t, n-2 degrees of freedom). A method needs three distinct
budgets; methods are ranked by projected BPB (lower first) and by slope (steeper first). ``suites.html`` plots all
methods' points and curves together on log-log axes (inline SVG, no script).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from leaderboard.scaling import ScalingFit
from runner.speedrun import SUITE_SEPARATOR
from runner.stats import t_ppf

SEPARATOR = SUITE_SEPARATOR  # how speedrun_suite names its members: one definition, in the runner
REFERENCE_FLOPS = 1e18


class Point(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def bpb(self) -> float: ...
    @property
    def model_flops(self) -> float: ...


def method_of(name: str) -> str | None:
    return name.split(SEPARATOR, 1)[0] if SEPARATOR in name else None


def uncertainty(fit: ScalingFit, flops: Sequence[float], bpb: Sequence[float], ref: float) -> dict[str, float | None]:
    """Slope standard error and the 95% interval of the projection at ``ref`` (None with too few points)."""
    x = np.log(np.asarray(flops, dtype=float))
    y = np.log(np.maximum(np.asarray(bpb, dtype=float) - fit.c, 1e-12))
    n = len(x)
    out: dict[str, float | None] = {"slope_se": None, "proj_low": None, "proj_high": None}
    if n < 3:
        return out
    xm = float(x.mean())
    sxx = float(((x - xm) ** 2).sum())
    pred = math.log(fit.a) - fit.b * x
    s2 = float(((y - pred) ** 2).sum()) / (n - 2)
    if sxx <= 0:
        return out
    q = t_ppf(0.975, n - 2)
    out["slope_se"] = math.sqrt(s2 / sxx)
    x0 = math.log(ref)
    se0 = math.sqrt(s2 * (1 / n + (x0 - xm) ** 2 / sxx))
    centre = math.log(fit.a) - fit.b * x0
    out["proj_low"] = fit.c + math.exp(centre - q * se0)
    out["proj_high"] = fit.c + math.exp(centre + q * se0)
    return out


def _sse(lx: np.ndarray, y: np.ndarray, m: np.ndarray, n: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, ...]:
    """:func:`leaderboard.scaling._line_fit` for many groups and asymptotes at once: ``c`` is (G,) or (G, K);
    (log a, b, SSE) by the closed-form least-squares line (what ``np.polyfit(deg=1)`` solves)."""
    extra = c.ndim - 1
    lx_, y_, m_, n_ = (a.reshape(a.shape[:1] + (1,) * extra + a.shape[1:]) for a in (lx, y, m, n[:, None]))
    ly = np.where(m_, np.log(np.where(m_, y_ - c[..., None], 1.0)), 0.0)
    sx, sy = lx_.sum(-1), ly.sum(-1)
    sxx, sxy = (lx_ * lx_).sum(-1), (lx_ * ly).sum(-1)
    nn = n_[..., 0]
    slope = (nn * sxy - sx * sy) / (nn * sxx - sx * sx)
    intercept = (sy - slope * sx) / nn
    pred = np.exp(intercept[..., None] + slope[..., None] * lx_) + c[..., None]
    return intercept, -slope, np.where(m_, (pred - y_) ** 2, 0.0).sum(-1)


def fit_many(groups: Sequence[tuple[Sequence[float], Sequence[float]]]) -> list[ScalingFit | None]:
    """:func:`leaderboard.scaling.fit_power_law` on every group at once (the same grid scan of ``c`` and golden-
    section refinement, vectorised across groups): a thousand suites fit in milliseconds instead of seconds.
    The tests check it against ``fit_power_law`` group by group."""
    out: list[ScalingFit | None] = [None] * len(groups)
    clean = []
    for i, (f, b) in enumerate(groups):
        x, y = np.asarray(f, dtype=float), np.asarray(b, dtype=float)
        ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
        if len(np.unique(x[ok])) >= 3:
            clean.append((i, x[ok], y[ok]))
    if not clean:
        return out
    width = max(len(x) for _, x, _ in clean)
    m = np.zeros((len(clean), width), dtype=bool)
    logx = np.zeros((len(clean), width))
    y = np.full((len(clean), width), np.inf)
    for g, (_, xs, ys) in enumerate(clean):
        m[g, : len(xs)], logx[g, : len(xs)], y[g, : len(xs)] = True, np.log(xs), ys
    n = m.sum(1).astype(float)
    lx0 = logx.sum(1) / n
    lx = np.where(m, logx - lx0[:, None], 0.0)
    top = np.where(m, y, np.inf).min(1) * (1 - 1e-6)
    grid = np.linspace(0.0, top, 64).T  # (G, 64), the same points as fit_power_law's grid
    k = np.argmin(_sse(lx, y, m, n, grid)[2], axis=1)
    rows = np.arange(len(clean))
    lo, hi = grid[rows, np.maximum(k - 1, 0)], grid[rows, np.minimum(k + 1, 63)]
    phi = (math.sqrt(5) - 1) / 2
    for _ in range(40):
        m1, m2 = hi - phi * (hi - lo), lo + phi * (hi - lo)
        left = _sse(lx, y, m, n, m1)[2] <= _sse(lx, y, m, n, m2)[2]
        hi, lo = np.where(left, m2, hi), np.where(left, lo, m1)
    c = (lo + hi) / 2
    log_a, b, sse = _sse(lx, y, m, n, c)
    ym = np.where(m, y, 0.0).sum(1) / n
    sst = np.where(m, (y - ym[:, None]) ** 2, 0.0).sum(1)
    for g, (i, xs, _) in enumerate(clean):
        r2 = 1.0 - sse[g] / sst[g] if sst[g] > 0 else 1.0
        out[i] = ScalingFit(a=math.exp(log_a[g] + b[g] * lx0[g]), b=float(b[g]), c=float(c[g]), r2=float(r2),
                            n=len(xs))
    return out


def suites(points: Iterable[Point], ref: float = REFERENCE_FLOPS) -> list[dict[str, Any]]:
    """Every method with at least two members: its points, fit (when three budgets), slope and projection."""
    groups: dict[str, list[Point]] = defaultdict(list)
    for p in points:
        if (m := method_of(p.name)) is not None:
            groups[m].append(p)
    out = []
    shown = [(method, sorted(ms, key=lambda p: p.model_flops)) for method, ms in sorted(groups.items()) if len(ms) >= 2]
    fits = fit_many([([p.model_flops for p in ms], [p.bpb for p in ms]) for _, ms in shown])
    for (method, members), fit in zip(shown, fits, strict=True):
        flops = [p.model_flops for p in members]
        bpb = [p.bpb for p in members]
        row: dict[str, Any] = {"method": method, "n": len(members), "points": list(zip(flops, bpb, strict=True)),
                               "members": [p.name for p in members], "fit": fit, "slope": None, "projection": None}
        if fit is not None:
            row.update(slope=fit.b, projection=fit.predict(ref), r2=fit.r2, **uncertainty(fit, flops, bpb, ref))
        out.append(row)
    return out


def rankings(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    fitted = [r for r in rows if r["fit"] is not None]
    return (sorted(fitted, key=lambda r: r["projection"]), sorted(fitted, key=lambda r: -r["slope"]))


COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


PLOT_METHODS = 12


def plotted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every method, or the :data:`PLOT_METHODS` best by projected BPB when there are more (a chart of a thousand
    curves shows none); each gets its ``color``."""
    if len(rows) > PLOT_METHODS:
        rows = sorted((r for r in rows if r["fit"] is not None), key=lambda r: r["projection"])[:PLOT_METHODS]
    for i, r in enumerate(rows):
        r["color"] = COLORS[i % len(COLORS)]
    return rows


def plot_svg(rows: list[dict[str, Any]], width: int = 640, height: int = 360) -> str:
    """The given methods' points and fitted curves on one log-log chart (BPB vs model FLOPs)."""
    pts = [p for r in rows for p in r["points"]]
    if not pts:
        return ""
    lx = [math.log10(f) for f, _ in pts]
    ly = [math.log10(b) for _, b in pts]
    x0, x1 = min(lx) - 0.2, max(lx) + 0.2
    y0, y1 = min(ly) - 0.02, max(ly) + 0.02
    pad = 40

    def sx(v: float) -> float:
        return pad + (math.log10(v) - x0) / (x1 - x0) * (width - 2 * pad)

    def sy(v: float) -> float:
        return height - pad - (math.log10(v) - y0) / (y1 - y0) * (height - 2 * pad)

    parts = [f'<svg class="suites-plot" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="BPB against model FLOPs per method">',
             f'<rect x="{pad}" y="{pad}" width="{width - 2 * pad}" height="{height - 2 * pad}" fill="none" '
             'stroke="currentColor" stroke-opacity="0.3"/>']
    for i, r in enumerate(rows):
        c = r.get("color", COLORS[i % len(COLORS)])
        fit: ScalingFit | None = r["fit"]
        if fit is not None:
            xs = np.logspace(x0, x1, 48)
            ys = fit.a * xs ** (-fit.b) + fit.c
            keep = (ys > 0) & (np.log10(np.maximum(ys, 1e-300)) >= y0) & (np.log10(np.maximum(ys, 1e-300)) <= y1)
            line = " ".join(f"{sx(float(x)):.1f},{sy(float(y)):.1f}" for x, y in zip(xs[keep], ys[keep], strict=True))
            parts.append(f'<polyline class="curve" data-method="{i}" fill="none" stroke="{c}" points="{line}"/>')
        for f, b in r["points"]:
            parts.append(f'<circle cx="{sx(f):.1f}" cy="{sy(b):.1f}" r="3" fill="{c}"/>')
    parts.append(f'<text x="{width / 2}" y="{height - 8}" text-anchor="middle" font-size="11">model FLOPs (log)</text>')
    parts.append(f'<text x="12" y="{height / 2}" font-size="11" transform="rotate(-90 12 {height / 2})" '
                 'text-anchor="middle">BPB (log)</text></svg>')
    return "\n".join(parts)


def write_suites(out_dir: Any, points: Iterable[Point], common: dict[str, Any], ref: float = REFERENCE_FLOPS) -> int:
    """Write ``suites.html``; returns the number of methods shown."""
    from markupsafe import Markup

    from leaderboard.pages import environment

    rows = suites(points, ref)
    by_proj, by_slope = rankings(rows)
    shown = plotted(rows)
    html = environment().get_template("suites.html.j2").render(
        **common, root="", rows=rows, shown=shown, by_proj=by_proj, by_slope=by_slope, ref=ref,
        plot=Markup(plot_svg(shown)))
    (out_dir / "suites.html").write_text(html)
    return len(rows)
