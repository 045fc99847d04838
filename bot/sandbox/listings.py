"""Repository-wide listings in the sandbox, as GitHub pages them: issues, pull requests, issue comments.

The reports index reads a repository through these three listings. They are registered before the
``/issues/{number}`` routes so ``/issues/comments`` is not taken for an issue number (GitHub's routing too).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from bot.sandbox.state import SandboxState


def _page(items: list[Any], per_page: int, page: int) -> list[Any]:
    per_page = max(1, min(per_page, 100))
    return items[(max(page, 1) - 1) * per_page : max(page, 1) * per_page]


def add_listing_routes(app: FastAPI, st: SandboxState) -> None:
    @app.get("/repos/{o}/{r}/issues/comments")
    def repo_comments(o: str, r: str, per_page: int = 30, page: int = 1) -> Any:
        with st.lock:
            cs = [
                {k: v for k, v in c.items() if not k.startswith("_")}
                for _, c in sorted(st.comments.items())
                if c["_thread"][0] == f"{o}/{r}"
            ]
        return _page(cs, per_page, page)

    @app.get("/repos/{o}/{r}/issues")
    def list_issues(
        o: str, r: str, state: str = "open", labels: str = "", per_page: int = 30, page: int = 1
    ) -> Any:
        want = {x.strip() for x in labels.split(",") if x.strip()}
        with st.lock:
            threads = [
                t
                for (repo, n), t in sorted(st.threads.items(), key=lambda kv: -kv[0][1])
                if repo == f"{o}/{r}" and (state == "all" or t.state == state) and want <= set(t.labels)
            ]
            shaped = [st.issue_shape(t) for t in threads]
        return _page(shaped, per_page, page)

    @app.get("/repos/{o}/{r}/pulls")
    def list_pulls(
        o: str, r: str, head: str = "", state: str = "open", per_page: int = 30, page: int = 1
    ) -> Any:
        out = []
        with st.lock:
            for (repo, _), t in sorted(st.threads.items()):
                if repo != f"{o}/{r}" or t.pull is None or (state != "all" and t.state != state):
                    continue
                owner = t.pull.get("fork_owner") or o
                if head and head != f"{owner}:{t.pull['head_ref']}":
                    continue
                out.append(st.pull_shape(t))
        return _page(out, per_page, page)
