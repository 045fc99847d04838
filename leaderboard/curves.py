"""A run's curves for its page: the metrics.jsonl beside its results, read into the series the page draws.

Each run page draws training loss, eval BPB, learning rate and grad norm with the site's bundled Chart.js
(``templates/site/vendor``; nothing from the network). The points go into a small script file per run,
``runs/<slug>.curves.js``, that registers them under the run id: a page loads its own file and, when a reader
ticks other runs to overlay, theirs. Script files (unlike ``fetch``) load from ``file://`` too, so the overlay
works on a site opened from disk.
"""

from __future__ import annotations

import math
from typing import Any

from leaderboard.load import _read
from leaderboard.safe_json import script_json
from runner.tracking import read_metric_lines

MAX_CURVE_POINTS = 600

# (title, y-axis label, metric key; a key ending in "/" matches the first eval set's "eval/<set>/bpb")
CURVES = [
    ("Training loss", "loss (nats/token)", "train/loss"),
    ("Eval BPB", "bits per byte", "eval/"),
    ("Learning rate", "learning rate", "train/lr"),
    ("Gradient norm", "grad norm", "train/grad_norm"),
]


def metric_series(url: str) -> tuple[dict[str, list[tuple[float, float]]], int, str | None]:
    """Every numeric metric by step from metrics.jsonl: (series by key, bad line count, read error)."""
    try:
        text = _read(url).decode("utf-8", errors="replace")
    except OSError as err:
        return {}, 0, f"{url}: cannot read metrics: {err}"
    series: dict[str, list[tuple[float, float]]] = {}
    objs, bad = read_metric_lines(text)
    for obj in objs:
        try:
            step = float(obj["step"])
        except (ValueError, KeyError, TypeError):
            bad += 1
            continue
        if not math.isfinite(step):
            continue
        for k, v in obj.items():
            if k != "step" and isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
                series.setdefault(k, []).append((step, float(v)))
    return series, bad, None


def curve_data(url: str) -> tuple[list[dict[str, Any]], list[str]]:
    """One entry per curve of :data:`CURVES` the metrics hold at two or more steps (title, y label, metric key,
    points thinned evenly to at most MAX_CURVE_POINTS, the last kept), and warnings."""
    series, bad, err = metric_series(url)
    if err:
        return [], [err]
    warnings = [f"{url}: {bad} metrics line(s) without a numeric step skipped"] if bad else []
    curves = []
    for title, ylabel, key in CURVES:
        if key.endswith("/"):
            key = next((k for k in sorted(series) if k.startswith(key) and k.endswith("/bpb")), key)
        pts = sorted(series.get(key, []))
        if len(pts) < 2:
            continue
        stride = max(1, math.ceil(len(pts) / MAX_CURVE_POINTS))
        kept = pts[::stride] if pts[::stride][-1] == pts[-1] else [*pts[::stride], pts[-1]]
        curves.append({"title": title, "y": ylabel, "key": key,
                       "points": [[round(s, 6), float(f"{v:.6g}")] for s, v in kept]})
    return curves, warnings


def curves_script(run_id: str, name: str, curves: list[dict[str, Any]]) -> str:
    """The ``runs/<slug>.curves.js`` of a run: registers its curves under its id (text made safe for a script)."""
    payload = script_json({"run_id": run_id, "name": name, "curves": curves})
    return f"(window.OPENLAB_CURVES = window.OPENLAB_CURVES || {{}})[{script_json(run_id)}] = {payload};\n"


def summary(curves: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """First and last point of each curve: what the page says without JavaScript."""
    return [{"title": c["title"], "y": c["y"], "first": c["points"][0], "last": c["points"][-1],
             "n": len(c["points"])} for c in curves]
