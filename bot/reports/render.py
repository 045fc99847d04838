"""Write the reports index (``reports/index.html`` and ``reports/reports.json``) into the site folder."""

from __future__ import annotations

import json
from pathlib import Path

from bot.reports.model import Group, Headline
from leaderboard.execution_pages import common_context, record_environment
from leaderboard.rows import slugify

STATUS_ORDER = ("running", "preregistered", "needs-info", "done")


def add_headlines(groups: list[Group], site: Path) -> None:
    """Give each report its best run on the leaderboard (from the site's runs.json, built beside it): the run with
    the lowest BPB among the report's executions whose results landed."""
    try:
        runs = json.loads((site / "runs.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    landed = {r["run_id"]: r for r in runs if isinstance(r, dict) and isinstance(r.get("bpb"), int | float)}
    for g in groups:
        for r in g.reports:
            found = sorted((landed[e.run_id]["bpb"], e.run_id) for e in r.executions if e.run_id in landed)
            if found:
                bpb, rid = found[0]
                flops = landed[rid].get("model_flops")
                r.result = Headline(run_id=rid, bpb=bpb, url=f"../runs/{slugify(rid)}.html",
                                    model_flops=flops if isinstance(flops, int | float) else None)


def write_reports(
    groups: list[Group], out: str | Path, repo: str, repo_url: str, site_title: str = "openlab"
) -> Path:
    folder = Path(out) / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    add_headlines(groups, Path(out))
    counts: dict[str, int] = {}
    for g in groups:
        for r in g.reports:
            counts[r.status] = counts.get(r.status, 0) + 1
    html = (
        record_environment()
        .get_template("reports.html.j2")
        .render(
            **common_context(site_title, "../"),
            groups=groups,
            repo=repo,
            repo_url=repo_url,
            counts=[(s, counts.get(s, 0)) for s in STATUS_ORDER],
        )
    )
    (folder / "index.html").write_text(html, encoding="utf-8")
    data = [
        {"title": g.title, "description": g.description, "reports": [r.model_dump() for r in g.reports]}
        for g in groups
    ]
    (folder / "reports.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return folder / "index.html"
