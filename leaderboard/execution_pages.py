"""Static execution pages: ``executions/index.html`` and one ``executions/<run_id>.html`` per launch.

Rendered through the leaderboard's own Jinja environment, base template and stylesheet, so the leaderboard,
the reports index and the execution pages are one site that GitHub Pages serves as is.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment

from leaderboard.browse.paths import relative
from leaderboard.executions import ExecutionView, load_executions, status_counts
from leaderboard.pages import environment
from leaderboard.public import public_value
from leaderboard.rows import slugify

SAFE_NAME = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def record_environment(public: bool = False) -> Environment:
    """Filters of the execution templates; ``public``: the published site, local folders shortened
    (leaderboard.public); the operator's live view (`openlab browse`) shows them whole."""
    env = environment().overlay()
    shown = public_value if public else (lambda v: v)
    env.filters["tojson_pretty"] = lambda v: json.dumps(shown(v), indent=2, sort_keys=True, default=str)
    env.filters["store_rel"] = lambda full, prefix: relative(prefix, full)
    return env


def common_context(site_title: str = "openlab", root: str = "../") -> dict[str, Any]:
    """What base.html.j2 needs (it renders with StrictUndefined)."""
    return {
        "site_title": site_title,
        "root": root,
        "built_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "n_runs": None,  # not a leaderboard page: base.html.j2 then says where the page comes from instead
        "n_warnings": 0,
        "key_id": None,
    }


def page_name(run_id: str) -> str:
    """A file name that cannot leave the folder, whatever a run id holds."""
    safe = "".join(c if c in SAFE_NAME else "_" for c in run_id).lstrip(".")
    return f"{safe or 'run'}.html"


def write_execution_pages(
    prefix: str, out: str | Path, *, browse_base: str | None = None, common: dict[str, Any] | None = None
) -> tuple[list[ExecutionView], list[str]]:
    """Render every launch under ``prefix`` into ``out/executions/``; returns (views, warnings)."""
    warnings: list[str] = []
    views = load_executions(prefix, warnings)
    env = record_environment(public=True)
    ctx = {**common_context(), **(common or {}), "root": "../", "n_warnings": len(warnings), "public": True}
    folder = Path(out) / "executions"
    folder.mkdir(parents=True, exist_ok=True)
    css = (Path(env.loader.searchpath[0]) / "execution.css").read_text()  # type: ignore[union-attr]
    for view in views:
        # The leaderboard (built first into the same folder) has the run's page when its results landed.
        slug = slugify(view.run_id)
        run_page = f"../runs/{slug}.html" if (Path(out) / "runs" / f"{slug}.html").is_file() else None
        html = env.get_template("execution.html.j2").render(
            **ctx, ex=view, browse_base=browse_base, execution_css=css, run_page=run_page
        )
        (folder / page_name(view.run_id)).write_text(html, encoding="utf-8")
    index = env.get_template("executions.html.j2").render(
        **ctx, views=views, counts=status_counts(views), page_name=page_name, warnings=warnings
    )
    (folder / "index.html").write_text(index, encoding="utf-8")
    return views, warnings
