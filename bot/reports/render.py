"""Write the reports index (``reports/index.html`` and ``reports/reports.json``) into the site folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.reports.model import Group
from leaderboard.execution_pages import common_context, record_environment
from leaderboard.rows import slugify

STATUS_ORDER = ("running", "preregistered", "needs-info", "done")


def headline_results(groups: list[Group], site: Path) -> dict[int, dict[str, Any]]:
    """Issue number -> its best run on the leaderboard (BPB, link), from the site's runs.json built beside it.

    Execution links are titled ``<run id> (<status>)`` (bot.reports.build); a run counts once its results landed.
    """
    try:
        runs = json.loads((site / "runs.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    bpb = {r["run_id"]: r["bpb"] for r in runs if isinstance(r, dict) and isinstance(r.get("bpb"), int | float)}
    out: dict[int, dict[str, Any]] = {}
    for g in groups:
        for r in g.reports:
            ids = [e.title.rsplit(" (", 1)[0] for e in r.executions]
            found = [(bpb[i], i) for i in ids if i in bpb]
            if found:
                best, rid = min(found)
                out[r.number] = {"bpb": best, "url": f"../runs/{slugify(rid)}.html", "run_id": rid}
    return out


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
            results=headline_results(groups, Path(out)),
        )
    )
    (folder / "index.html").write_text(html, encoding="utf-8")
    data = [
        {"title": g.title, "description": g.description, "reports": [r.model_dump() for r in g.reports]}
        for g in groups
    ]
    (folder / "reports.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return folder / "index.html"
