"""The sandbox's "Re-run" buttons: a user re-requests one of the bot's check runs, or the whole check suite of a
commit, and gets the `check_run.rerequested` / `check_suite.rerequested` payload GitHub sends to the App.

As on GitHub, ``pull_requests`` lists only PRs whose head branch is in the repository (empty for a fork's PR).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request

from bot.sandbox import shapes
from bot.sandbox.state import SandboxState


def _pr_refs(st: SandboxState, repo: str, sha: str) -> list[dict[str, Any]]:
    out = []
    rid = st.repos[repo].id
    for (name, n), t in sorted(st.threads.items()):
        p = t.pull
        if name != repo or p is None or p.get("fork_owner") or p["head_sha"] != sha or t.state != "open":
            continue
        ref = {"id": rid, "url": f"{shapes.API}/repos/{repo}", "name": repo.split("/")[1]}
        out.append({"id": 20_000 + n, "number": n, "url": f"{shapes.API}/repos/{repo}/pulls/{n}",
                    "head": {"ref": p["head_ref"], "sha": p["head_sha"], "repo": ref},
                    "base": {"ref": p["base_ref"], "sha": p["base_sha"], "repo": ref}})
    return out


def _suite(st: SandboxState, repo: str, sha: str) -> dict[str, Any]:
    branch = next((b for b, s in st.repos[repo].branches.items() if s == sha), None)
    return {
        "id": 1, "node_id": "CS_1", "head_branch": branch, "head_sha": sha, "status": "completed",
        "conclusion": "failure", "url": f"{shapes.API}/repos/{repo}/check-suites/1", "before": None, "after": sha,
        "pull_requests": _pr_refs(st, repo, sha), "app": shapes.app_(st.app_id, st.user(repo.split("/")[0])),
        "created_at": shapes.NOW, "updated_at": shapes.NOW, "latest_check_runs_count": 1,
        "check_runs_url": f"{shapes.API}/repos/{repo}/check-suites/1/check-runs",
        "head_commit": {"id": sha, "tree_id": sha, "message": "commit", "timestamp": shapes.NOW,
                        "author": {"name": "dev", "email": "dev@example.org"},
                        "committer": {"name": "dev", "email": "dev@example.org"}},
    }


def add_check_routes(app: FastAPI, st: SandboxState) -> None:
    @app.post("/_sandbox/checks/rerequest")
    async def rerequest(request: Request) -> Any:
        """{repo, user, check_run_id} re-runs one check run; {repo, user, head_sha} re-runs the commit's suite."""
        b = await request.json()
        repo = b["repo"]
        with st.lock:
            env = {"repository": st.repo_shape(repo), "sender": st.user(b["user"])}
            if "check_run_id" in b:
                cr = {k: v for k, v in st.check_runs[int(b["check_run_id"])].items() if not k.startswith("_")}
                suite = _suite(st, repo, cr["head_sha"])
                cr.update(app=suite["app"], check_suite=suite, pull_requests=suite["pull_requests"],
                          completed_at=cr.get("completed_at") or shapes.NOW,
                          details_url=cr.get("details_url") or cr["html_url"],
                          external_id=cr.get("external_id") or "")
                return {"event": "check_run", "check_run": cr, **env}
            return {"event": "check_suite", "check_suite": _suite(st, repo, b["head_sha"]), **env}
