"""Read what the reports need from GitHub in a few paginated listings, not one call per issue.

Three listings cover a repository: issues (``state=all``; pull requests filtered out), pull requests, and the
repository-wide issue-comment feed (``/issues/comments``), which holds every issue and PR conversation comment.
Only comments written by the bot's own login are trusted for hidden markers and links. A rate limit or 5xx
that outlasts the client's retries stops the refresh with a clear error; the previous site stays as it was.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from bot.github.client import GitHubClient


class Snapshot(BaseModel):
    repo: str
    html_url: str
    issues: list[dict[str, Any]]
    pulls: list[dict[str, Any]]
    comments: list[dict[str, Any]]


def _slim_issue(i: dict[str, Any]) -> dict[str, Any]:
    return {
        "number": i["number"],
        "title": i.get("title") or "",
        "body": i.get("body") or "",
        "state": i.get("state", "open"),
        "html_url": i.get("html_url", ""),
        "labels": [lb["name"] if isinstance(lb, dict) else str(lb) for lb in i.get("labels", [])],
        "user": (i.get("user") or {}).get("login", ""),
        "created_at": i.get("created_at", ""),
    }


def _slim_pull(p: dict[str, Any]) -> dict[str, Any]:
    return {
        "number": p["number"],
        "title": p.get("title") or "",
        "body": p.get("body") or "",
        "state": p.get("state", "open"),
        "merged_at": p.get("merged_at"),
        "html_url": p.get("html_url", ""),
        "head_ref": (p.get("head") or {}).get("ref", ""),
    }


def _slim_comment(c: dict[str, Any]) -> dict[str, Any]:
    issue_url = c.get("issue_url") or ""
    return {
        "issue_number": int(issue_url.rsplit("/", 1)[-1]) if issue_url.rsplit("/", 1)[-1].isdigit() else None,
        "user": (c.get("user") or {}).get("login", ""),
        "body": c.get("body") or "",
        "html_url": c.get("html_url", ""),
    }


def collect(
    gh: GitHubClient, repo: str, html_base: str = "https://github.com", max_pages: int = 200
) -> Snapshot:
    issues = gh.paginate(f"/repos/{repo}/issues", {"state": "all", "per_page": 100}, limit_pages=max_pages)
    pulls = gh.paginate(f"/repos/{repo}/pulls", {"state": "all", "per_page": 100}, limit_pages=max_pages)
    comments = gh.paginate(f"/repos/{repo}/issues/comments", {"per_page": 100}, limit_pages=max_pages)
    return Snapshot(
        repo=repo,
        html_url=f"{html_base.rstrip('/')}/{repo}",
        issues=[_slim_issue(i) for i in issues if "pull_request" not in i],
        pulls=[_slim_pull(p) for p in pulls],
        comments=[_slim_comment(c) for c in comments],
    )
