"""Write the reports index (``reports/index.html`` and ``reports/reports.json``) into the site folder."""

from __future__ import annotations

import json
from pathlib import Path

from bot.reports.model import Group
from leaderboard.execution_pages import common_context, record_environment

STATUS_ORDER = ("running", "preregistered", "needs-info", "done")


def write_reports(
    groups: list[Group], out: str | Path, repo: str, repo_url: str, site_title: str = "openlab"
) -> Path:
    folder = Path(out) / "reports"
    folder.mkdir(parents=True, exist_ok=True)
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
