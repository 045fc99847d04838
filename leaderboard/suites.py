"""Scaling suites on the site: one method at several budgets (``runner.speedrun.speedrun_suite``), fitted and ranked.

A suite member's run is named ``<method>__<member>``; the members of a method are fitted with the leaderboard's
power law (:func:`leaderboard.scaling.fit_power_law`, ``bpb = a * flops^-b + c``). The *slope* is ``b``; the
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

from leaderboard.scaling import ScalingFit, fit_power_law

SEPARATOR = "__"
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
    from scipy.stats import t

    q = float(t.ppf(0.975, n - 2))
    out["slope_se"] = math.sqrt(s2 / sxx)
    x0 = math.log(ref)
    se0 = math.sqrt(s2 * (1 / n + (x0 - xm) ** 2 / sxx))
    centre = math.log(fit.a) - fit.b * x0
    out["proj_low"] = fit.c + math.exp(centre - q * se0)
    out["proj_high"] = fit.c + math.exp(centre + q * se0)
    return out


def suites(points: Iterable[Point], ref: float = REFERENCE_FLOPS) -> list[dict[str, Any]]:
    """Every method with at least two members: its points, fit (when three budgets), slope and projection."""
    groups: dict[str, list[Point]] = defaultdict(list)
    for p in points:
        if (m := method_of(p.name)) is not None:
            groups[m].append(p)
    out = []
    for method, members in sorted(groups.items()):
        if len(members) < 2:
            continue
        members.sort(key=lambda p: p.model_flops)
        flops = [p.model_flops for p in members]
        bpb = [p.bpb for p in members]
        fit = fit_power_law(flops, bpb)
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


def plot_svg(rows: list[dict[str, Any]], width: int = 640, height: int = 360) -> str:
    """All methods' points and fitted curves on one log-log chart (BPB vs model FLOPs)."""
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
        c = COLORS[i % len(COLORS)]
        fit: ScalingFit | None = r["fit"]
        if fit is not None:
            xs = np.linspace(10**x0, 10**x1, 48) if x1 - x0 < 1 else np.logspace(x0, x1, 48)
            line = " ".join(f"{sx(float(x)):.1f},{sy(fit.predict(float(x))):.1f}" for x in xs
                            if fit.predict(float(x)) > 0 and y0 <= math.log10(fit.predict(float(x))) <= y1)
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
    for i, r in enumerate(rows):
        r["color"] = COLORS[i % len(COLORS)]
    html = environment().get_template("suites.html.j2").render(
        **common, root="", rows=rows, by_proj=by_proj, by_slope=by_slope, ref=ref, plot=Markup(plot_svg(rows)))
    (out_dir / "suites.html").write_text(html)
    return len(rows)
