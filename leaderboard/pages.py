"""Rendering: the jinja2 environment (autoescaped, so user text is never emitted raw), run pages (their curves'
data: :mod:`leaderboard.curves`).

Templates live in ``templates/site/``, part of the ``templates`` package that ships in the wheel (found through
``importlib.resources`` in a checkout, an editable install or an installed wheel alike).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, UndefinedError, select_autoescape

import templates
from leaderboard.curves import curve_data, curves_script, summary
from leaderboard.load import LoadedRun, safe_url
from leaderboard.public import public_json
from leaderboard.rows import Row, repo_web_url
from runner.schema import ImportedResults, Results


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


def public_source(source: str) -> str:
    """The results file as readers may see it: a relative path as given, else only its last two parts
    (an absolute path or URL names the build machine's folders, which say nothing to a reader)."""
    if "://" not in source and not source.startswith(("/", "~")) and ".." not in source and ":\\" not in source:
        return source
    parts = [p for p in source.replace("\\", "/").split("/") if p]
    return "/".join(parts[-2:])


OVERLAY_MAX = 12  # runs offered for overlay on a run page


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
        # track id -> runs a reader may overlay on a page of that track (best first; leaderboard.site picks them)
        self.overlay: dict[str, list[dict[str, Any]]] = common.get("overlay_pool", {})
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
        curves: list[dict[str, Any]],
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
            "curves": summary(curves),
            "overlay": [c for c in self.overlay.get(ranks[0]["track"], []) if c["run_id"] != r.run_id][:OVERLAY_MAX]
            if curves and ranks else [],
        }

    def render(
        self, run: LoadedRun, row: Row, ranks: list[dict[str, Any]], config_json: str | None = None
    ) -> tuple[str, list[str], str | None]:
        """HTML of one run page, any warnings (metrics problems) and the run's curves script (None without curves).
        ``config_json``: if already made."""
        warnings: list[str] = []
        curves: list[dict[str, Any]] = []
        if run.metrics:
            curves, warnings = curve_data(run.metrics)
        script = curves_script(run.results.run_id, run.results.name, curves) if curves else None
        if config_json is None:
            config_json = config_text(run.results)
        if isinstance(run.results, ImportedResults):
            return self.imported.render(self.imported_context(run, row, ranks, config_json)), warnings, None
        ctx = self.context(run, row, ranks, curves, config_json)
        if self.frame is None:
            return self.template.render(ctx), warnings, script
        c = self.template.new_context(ctx)
        head, mid, tail = self.frame
        blocks = self.template.blocks
        return "".join((head, *blocks["title"](c), mid, *blocks["main"](c), tail)), warnings, script


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
    html, warnings, _ = RunPages(common).render(run, row, ranks)
    return html, warnings


__all__ = ["RunPages", "config_text", "render_run_page", "templates_dir"]
