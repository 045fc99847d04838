"""Rendering: the jinja2 environment (autoescaped, so user text is never emitted raw), run pages, loss curves.

Templates live in ``templates/site/``, part of the ``templates`` package that ships in the wheel (found through
``importlib.resources`` in a checkout, an editable install or an installed wheel alike).
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, UndefinedError, select_autoescape
from markupsafe import Markup

import templates
from leaderboard.load import LoadedRun, _read, safe_url
from leaderboard.public import public_json
from leaderboard.rows import Row, repo_web_url
from runner.schema import ImportedResults, Results

MAX_CURVE_POINTS = 600


def templates_dir() -> Path:
    return templates.path("site")


def sci(v: float | None) -> str:
    return "—" if v is None else f"{v:.2e}".replace("e+", "e")


def si(v: float | None) -> str:
    if v is None:
        return "—"
    for scale, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if v >= scale:
            q = v / scale
            return f"{q:.1f}{unit}" if q < 10 else f"{q:.0f}{unit}"
    return str(v)


def dur(s: float | None) -> str:
    if s is None:
        return "—"
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.2f} h"


def pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.1f}%"


def bpb(v: float | None) -> str:
    return "—" if v is None else f"{v:.4f}"


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(templates_dir())),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(sci=sci, si=si, dur=dur, pct=pct, bpb=bpb)
    return env


def script_json(obj: Any) -> str:
    """JSON safe to inline in a <script> element: no '<', '>' or '&' can close it or open a comment."""
    return markup_safe(json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False))


def markup_safe(json_text: str) -> str:
    """The same JSON value with '<', '>' and '&' as \\u escapes: no user text reads as markup anywhere."""
    return json_text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


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
    bad = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            step = float(obj["step"])
        except (ValueError, KeyError, TypeError):
            bad += 1
            continue
        if not isinstance(obj, dict) or not math.isfinite(step):
            continue
        for k, v in obj.items():
            if k != "step" and isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
                series.setdefault(k, []).append((step, float(v)))
    return series, bad, None


def loss_curve_svg(url: str, source: str) -> tuple[str | None, list[str]]:
    """An inline SVG of ``train/loss`` by ``step`` from metrics.jsonl; bad lines are skipped and counted."""
    charts, warnings = curve_svgs(url)
    loss = [svg for title, svg in charts if title == "Training loss"]
    return (loss[0] if loss else None), warnings


def curve_svgs(url: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(title, SVG) for each of CURVES the metrics hold at two or more steps, and warnings."""
    series, bad, err = metric_series(url)
    if err:
        return [], [err]
    warnings = [f"{url}: {bad} metrics line(s) without a numeric step skipped"] if bad else []
    charts = []
    for title, ylabel, key in CURVES:
        if key.endswith("/"):
            key = next((k for k in sorted(series) if k.startswith(key) and k.endswith("/bpb")), key)
        pts = sorted(series.get(key, []))
        if len(pts) < 2:
            continue
        stride = max(1, len(pts) // MAX_CURVE_POINTS)
        charts.append((title, _polyline_svg(pts[::stride], ylabel, title)))
    return charts, warnings


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values (1, 2 or 5 × 10^k apart) covering [lo, hi]."""
    span = hi - lo
    raw = span / max(1, n - 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _fmt(v: float) -> str:
    return f"{v:.3g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.1e}"


def _polyline_svg(pts: list[tuple[float, float]], ylabel: str = "loss", title: str = "training loss") -> str:
    W, H, L, R, T, B = 800, 260, 72, 12, 12, 44
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0, y1 = min(ys), max(ys) if max(ys) > min(ys) else min(ys) + 1

    def X(v: float) -> float:
        return L + (v - x0) / (x1 - x0) * (W - L - R)

    def Y(v: float) -> float:
        return T + (y1 - v) / (y1 - y0) * (H - T - B)

    line = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in pts)
    ticks = []
    for v in _nice_ticks(y0, y1):
        ticks.append(
            f'<line class="grid" x1="{L}" x2="{W - R}" y1="{Y(v):.1f}" y2="{Y(v):.1f}"/>'
            f'<text class="ytick" x="{L - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{_fmt(v)}</text>'
        )
    for v in _nice_ticks(x0, x1):
        ticks.append(
            f'<line class="grid" x1="{X(v):.1f}" x2="{X(v):.1f}" y1="{T}" y2="{H - B}"/>'
            f'<text class="xtick" x="{X(v):.1f}" y="{H - B + 16}" text-anchor="middle">{v:g}</text>'
        )
    mid = (T + H - B) / 2
    labels = (
        f'<text class="xlabel" x="{(L + W - R) / 2}" y="{H - 4}" text-anchor="middle">step</text>'
        f'<text class="ylabel" x="14" y="{mid}" transform="rotate(-90 14 {mid})" text-anchor="middle">{ylabel}</text>'
    )
    return (
        f'<svg class="loss curve" viewBox="0 0 {W} {H}" role="img" aria-label="{title.lower()} by step">'
        f'{"".join(ticks)}{labels}<polyline points="{line}"/></svg>'
    )


def public_source(source: str) -> str:
    """The results file as readers may see it: a relative path as given, else only its last two parts
    (an absolute path or URL names the build machine's folders, which say nothing to a reader)."""
    if "://" not in source and not source.startswith(("/", "~")) and ".." not in source and ":\\" not in source:
        return source
    parts = [p for p in source.replace("\\", "/").split("/") if p]
    return "/".join(parts[-2:])


class RunPages:
    """Renders every run page of one build with one compiled template and one pre-rendered frame.

    The base layout (head, header, footer) depends only on the build's shared context, so it is rendered
    once with marker blocks and split; each run then only runs the template's ``title`` and ``main``
    blocks. The result is byte-identical to rendering ``run.html.j2`` whole (a test holds it to that); if
    the frame cannot be split (a base that repeats a block or reads per-run variables), every page falls
    back to the whole render.
    """

    _MARKS = {"title": "\x00openlab-title\x00", "main": "\x00openlab-main\x00"}

    def __init__(self, common: dict[str, Any]):
        self.template = environment().get_template("run.html.j2")
        self.imported = environment().get_template("imported_run.html.j2")
        self.shared = {**common, "root": "../"}
        self.repo = repo_web_url(common.get("repo_url"))
        self._remotes: dict[str | None, str | None] = {}
        self.frame = self._split_frame()

    def _split_frame(self) -> tuple[str, str, str] | None:
        ctx = self.template.new_context(dict(self.shared))
        for name, mark in self._MARKS.items():
            ctx.blocks[name] = [lambda _ctx, m=mark: iter((m,))]
        try:
            text = "".join(self.template.root_render_func(ctx))
        except UndefinedError:
            return None
        t, m = self._MARKS["title"], self._MARKS["main"]
        if text.count(t) != 1 or text.count(m) != 1 or text.index(t) > text.index(m):
            return None
        head, rest = text.split(t)
        mid, tail = rest.split(m)
        return head, mid, tail

    def _repo_of(self, remote: str | None) -> str | None:
        if remote not in self._remotes:
            self._remotes[remote] = repo_web_url(remote)
        return self._remotes[remote]

    def imported_context(
        self, run: LoadedRun, row: Row, ranks: list[dict[str, Any]], config_json: str
    ) -> dict[str, Any]:
        r = run.results
        return {
            **self.shared,
            "r": r,
            "row": row,
            "ranks": ranks,
            "source": run.source,
            "author_url": safe_url(r.author.url) if r.author else None,
            "config_json": config_json,
        }

    def context(
        self,
        run: LoadedRun,
        row: Row,
        ranks: list[dict[str, Any]],
        curves: list[tuple[str, str]],
        config_json: str,
    ) -> dict:
        r = run.results
        p = r.provenance
        repo = self.repo or self._repo_of(p.git_remote)
        return {
            **self.shared,
            "r": r,
            "row": row,
            "ranks": ranks,
            "source": run.source,
            "source_name": public_source(run.source),
            "author_url": safe_url(r.author.url) if r.author else None,
            "pr_url": f"{repo}/pull/{p.pr}" if repo and p.pr else None,
            "issue_url": f"{repo}/issues/{p.issue}" if repo and p.issue else None,
            "exec_url": safe_url(p.execution_url),
            "config_json": config_json,
            "curves": [(t, Markup(svg)) for t, svg in curves],
        }

    def render(
        self, run: LoadedRun, row: Row, ranks: list[dict[str, Any]], config_json: str | None = None
    ) -> tuple[str, list[str]]:
        """HTML of one run page and any warnings (metrics problems). ``config_json``: if already made."""
        warnings: list[str] = []
        curves: list[tuple[str, str]] = []
        if run.metrics:
            curves, warnings = curve_svgs(run.metrics)
        if config_json is None:
            config_json = config_text(run.results)
        if isinstance(run.results, ImportedResults):
            return self.imported.render(self.imported_context(run, row, ranks, config_json)), warnings
        ctx = self.context(run, row, ranks, curves, config_json)
        if self.frame is None:
            return self.template.render(ctx), warnings
        c = self.template.new_context(ctx)
        head, mid, tail = self.frame
        blocks = self.template.blocks
        return "".join((head, *blocks["title"](c), mid, *blocks["main"](c), tail)), warnings


def config_text(r: Results | ImportedResults) -> str:
    """The config block of a run page: the run's config, or what Marin recorded for an imported run."""
    if isinstance(r, ImportedResults):
        recorded = {
            "model_config": r.model_config_,
            "train_config": r.train_config,
            "resources": r.resources,
            "tokenized_dataset": r.tokenized_dataset,
        }
        return public_json(json.dumps({k: v for k, v in recorded.items() if v is not None}, indent=2, sort_keys=True))
    return public_json(r.config.model_dump_json(indent=2))


def render_run_page(
    run: LoadedRun, row: Row, ranks: list[dict[str, Any]], common: dict[str, Any]
) -> tuple[str, list[str]]:
    """HTML of one run page and any warnings; builds render many through one :class:`RunPages`."""
    return RunPages(common).render(run, row, ranks)


__all__ = ["RunPages", "config_text", "markup_safe", "render_run_page", "script_json", "templates_dir"]
