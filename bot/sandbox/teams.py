"""Organization teams in the sandbox: a team has members (``member`` or ``maintainer``) and roles on repositories.

As on GitHub, a user's role on a repository (the collaborator permission endpoint) is the highest of their direct
role and the roles of every team they belong to; ``GET /orgs/{org}/teams/{team_slug}/memberships/{username}``
answers a member's membership or 404.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from bot.sandbox import shapes
from bot.sandbox.state import SandboxState

ORDER = ["none", "read", "triage", "write", "maintain", "admin"]


def effective_role(st: SandboxState, repo: str, user: str) -> str:
    roles = [st.roles.get((repo, user), "read")]
    roles += [t["repos"][repo] for t in st.teams.values() if user in t["members"] and repo in t["repos"]]
    return max(roles, key=lambda r: ORDER.index(r) if r in ORDER else 0)


def add_team_routes(app: FastAPI, st: SandboxState) -> None:
    @app.get("/orgs/{org}/teams/{team_slug}/memberships/{username}")
    def membership(org: str, team_slug: str, username: str) -> Any:
        with st.lock:
            team = st.teams.get((org, team_slug))
            role = (team or {}).get("members", {}).get(username)
        if role is None:
            return JSONResponse({"message": "Not Found", "documentation_url": "https://docs.github.com/rest"},
                                status_code=404)
        return {"url": f"{shapes.API}/organizations/1/team/1/memberships/{username}", "role": role,
                "state": "active"}
