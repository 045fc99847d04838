"""The sandbox's GitHub REST API (the endpoints the bot calls), GitHub-shaped, with GitHub's status codes.

Every request is logged (method, path, query, JSON body, status) so tests can check each against GitHub's
OpenAPI description. Faults (e.g. a 403 secondary rate limit with `retry-after`, a 502) can be injected per
path through the control API (control.py), and so can latency.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from bot.sandbox import shapes
from bot.sandbox.checks import add_check_routes
from bot.sandbox.control import add_control_routes
from bot.sandbox.gitdata import add_git_data_routes
from bot.sandbox.hooks import add_hook_routes, app_jwt_error
from bot.sandbox.listings import add_listing_routes
from bot.sandbox.manifests import add_manifest_routes
from bot.sandbox.state import SandboxState, Thread
from bot.sandbox.teams import add_team_routes, effective_role


def _err(status: int, message: str) -> JSONResponse:
    return JSONResponse({"message": message, "documentation_url": "https://docs.github.com/rest"}, status_code=status)


def create_sandbox_app(state: SandboxState | None = None) -> FastAPI:
    st = state or SandboxState()
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    app.state.sandbox = st

    @app.middleware("http")
    async def log_and_auth(request: Request, call_next: Any) -> Response:
        path = request.url.path
        if path.startswith("/_sandbox"):
            return await call_next(request)
        raw = await request.body()
        form_post = request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded")
        entry = {"method": request.method, "path": path, "query": dict(request.query_params),
                 "body": json.loads(raw) if raw and not form_post else None, "status": 0, "t": time.time()}
        if st.latency_s:
            time.sleep(st.latency_s)
        with st.lock:
            fault = st.take_fault(request.method, path)
        if fault is not None:
            resp: Response = JSONResponse({"message": "You have exceeded a secondary rate limit" if fault.status in (
                403, 429) else "Server Error"}, status_code=fault.status, headers=fault.headers)
        elif not path.startswith(("/app/", "/app-manifests/")) and not path.endswith("/settings/apps/new") \
                and _login(st, request) is None:  # the manifest flow is unauthenticated on GitHub too
            resp = _err(401, "Bad credentials")
        else:
            resp = await call_next(request)
        entry["status"] = resp.status_code
        with st.lock:
            st.requests.append(entry)
        return resp

    _add_app_routes(app, st)
    add_hook_routes(app, st)
    add_check_routes(app, st)
    add_team_routes(app, st)
    add_listing_routes(app, st)  # before /issues/{n}: "/issues/comments" is a listing, not an issue
    _add_issue_routes(app, st)
    _add_pull_routes(app, st)
    _add_repo_routes(app, st)
    add_git_data_routes(app, st)
    add_control_routes(app, st)
    add_manifest_routes(app, st)
    return app


def _login(st: SandboxState, request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    token = auth.split(" ", 1)[1] if " " in auth else ""
    return st.tokens.get(token)


def _thread(st: SandboxState, o: str, r: str, n: int) -> Thread | None:
    return st.threads.get((f"{o}/{r}", n))


def _add_app_routes(app: FastAPI, st: SandboxState) -> None:
    @app.post("/app/installations/{installation_id}/access_tokens", status_code=201)
    def access_token(installation_id: int, request: Request) -> Any:
        if (bad := app_jwt_error(st, request)) is not None:
            return bad
        token = "ghs_" + secrets.token_hex(18)
        st.tokens[token] = st.bot_login
        expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return JSONResponse({"token": token, "expires_at": expires, "permissions": {"issues": "write"},
                             "repository_selection": "all"}, status_code=201)


def _add_issue_routes(app: FastAPI, st: SandboxState) -> None:
    @app.get("/repos/{o}/{r}/issues/{n}")
    def get_issue(o: str, r: str, n: int) -> Any:
        t = _thread(st, o, r, n)
        return st.issue_shape(t) if t else _err(404, "Not Found")

    @app.get("/repos/{o}/{r}/issues/{n}/comments")
    def list_comments(o: str, r: str, n: int, per_page: int = 30, page: int = 1) -> Any:
        with st.lock:
            cs = [c for c in st.comments.values() if c["_thread"] == (f"{o}/{r}", n)]
        return [_public(c) for c in cs[(page - 1) * per_page: page * per_page]]

    @app.post("/repos/{o}/{r}/issues/{n}/comments", status_code=201)
    async def create_comment(o: str, r: str, n: int, request: Request) -> Any:
        body = (await request.json()).get("body", "")
        if _thread(st, o, r, n) is None:
            return _err(404, "Not Found")
        if len(body) > 65536:
            return _err(422, "Body is too long (maximum is 65536 characters)")
        login = _login(st, request) or st.bot_login
        with st.lock:
            cid = next(st.ids)
            c = shapes.comment(f"{o}/{r}", cid, n, body, st.user(login))
            st.comments[cid] = {**c, "_thread": (f"{o}/{r}", n)}
        return JSONResponse(c, status_code=201)

    @app.patch("/repos/{o}/{r}/issues/comments/{cid}")
    async def update_comment(o: str, r: str, cid: int, request: Request) -> Any:
        body = (await request.json()).get("body", "")
        if len(body) > 65536:
            return _err(422, "Body is too long (maximum is 65536 characters)")
        with st.lock:
            c = st.comments.get(cid)
            if c is None:
                return _err(404, "Not Found")
            c["body"] = body
            c["updated_at"] = shapes.NOW
            return _public(c)

    @app.post("/repos/{o}/{r}/issues/{n}/labels")
    async def add_labels(o: str, r: str, n: int, request: Request) -> Any:
        t = _thread(st, o, r, n)
        if t is None:
            return _err(404, "Not Found")
        for name in (await request.json()).get("labels", []):
            if name not in t.labels:
                t.labels.append(name)
        return st.labels_of(t)

    @app.delete("/repos/{o}/{r}/issues/{n}/labels/{name}")
    def remove_label(o: str, r: str, n: int, name: str) -> Any:
        t = _thread(st, o, r, n)
        if t is None or name not in t.labels:
            return _err(404, "Label does not exist")
        t.labels.remove(name)
        return st.labels_of(t)

    @app.post("/repos/{o}/{r}/issues/comments/{cid}/reactions")
    async def react(o: str, r: str, cid: int, request: Request) -> Any:
        content = (await request.json()).get("content")
        login = _login(st, request) or st.bot_login
        with st.lock:
            if cid not in st.comments:
                return _err(404, "Not Found")
            for x in st.reactions:
                if x["_comment"] == cid and x["content"] == content and x["user"]["login"] == login:
                    return JSONResponse(_public(x), status_code=200)
            x = {"id": next(st.ids), "node_id": "RE_1", "user": st.user(login), "content": content,
                 "created_at": shapes.NOW, "_comment": cid}
            st.reactions.append(x)
        return JSONResponse(_public(x), status_code=201)


def _add_pull_routes(app: FastAPI, st: SandboxState) -> None:
    @app.get("/repos/{o}/{r}/pulls/{n}")
    def get_pull(o: str, r: str, n: int) -> Any:
        t = _thread(st, o, r, n)
        return st.pull_shape(t) if t and t.pull else _err(404, "Not Found")

    @app.get("/repos/{o}/{r}/pulls/{n}/files")
    def pull_files(o: str, r: str, n: int, per_page: int = 30, page: int = 1) -> Any:
        t = _thread(st, o, r, n)
        if t is None or t.pull is None:
            return _err(404, "Not Found")
        return st.pull_files(t)[(page - 1) * per_page: page * per_page]

    @app.post("/repos/{o}/{r}/pulls", status_code=201)
    async def create_pull(o: str, r: str, request: Request) -> Any:
        body = await request.json()
        repo = st.repos[f"{o}/{r}"]
        if body["head"] not in repo.branches or body["base"] not in repo.branches:
            return _err(422, "Validation Failed")
        with st.lock:
            n = st.next_number(f"{o}/{r}")
            t = Thread(f"{o}/{r}", n, body["title"], body.get("body"), _login(st, request) or st.bot_login,
                       pull={"head_ref": body["head"], "head_sha": repo.branches[body["head"]],
                             "base_ref": body["base"], "base_sha": repo.branches[body["base"]],
                             "draft": bool(body.get("draft"))})
            st.threads[(f"{o}/{r}", n)] = t
        return JSONResponse(st.pull_shape(t), status_code=201)


def _add_repo_routes(app: FastAPI, st: SandboxState) -> None:
    @app.get("/repos/{o}/{r}/collaborators/{u}/permission")
    def permission(o: str, r: str, u: str) -> Any:
        role = effective_role(st, f"{o}/{r}", u)  # direct and through teams, as GitHub reports it
        legacy = {"maintain": "write", "triage": "read"}.get(role, role)
        return {"permission": legacy, "role_name": role, "user": {**st.user(u), "role_name": role}}

    @app.get("/repos/{o}/{r}/contents/{path:path}")
    def get_contents(o: str, r: str, path: str, ref: str | None = None) -> Any:
        files = st.resolve(f"{o}/{r}", ref) if f"{o}/{r}" in st.repos else None
        if files is not None and path not in files and any(f.startswith(path.rstrip("/") + "/") for f in files):
            return _directory(o, r, path.rstrip("/"), files)
        if files is None or path not in files:
            return _err(404, "Not Found")
        data = files[path].encode()
        u = f"{shapes.API}/repos/{o}/{r}/contents/{path}"
        return {"type": "file", "encoding": "base64", "size": len(data), "name": path.rsplit("/", 1)[-1],
                "path": path, "content": base64.b64encode(data).decode(), "sha": "0" * 40, "url": u,
                "git_url": None, "html_url": None, "download_url": None,
                "_links": {"self": u, "git": None, "html": None}}

    @app.put("/repos/{o}/{r}/contents/{path:path}")
    async def put_contents(o: str, r: str, path: str, request: Request) -> Any:
        body = await request.json()
        branch = body.get("branch") or st.repos[f"{o}/{r}"].default_branch
        with st.lock:
            sha = st.commit(f"{o}/{r}", branch, {path: base64.b64decode(body["content"]).decode()}, None,
                            message=str(body.get("message", "")))
        return JSONResponse({"content": {"name": path.rsplit("/", 1)[-1], "path": path, "sha": "0" * 40},
                             "commit": {"sha": sha, "message": body.get("message", "")}}, status_code=201)

    @app.get("/repos/{o}/{r}/git/ref/{ref:path}")
    def get_ref(o: str, r: str, ref: str) -> Any:
        sha = st.repos[f"{o}/{r}"].branches.get(ref.removeprefix("heads/"))
        if sha is None:
            return _err(404, "Not Found")
        return {"ref": f"refs/{ref}", "node_id": "REF_1", "url": f"{shapes.API}/repos/{o}/{r}/git/refs/{ref}",
                "object": {"type": "commit", "sha": sha, "url": f"{shapes.API}/repos/{o}/{r}/git/commits/{sha}"}}

    @app.post("/repos/{o}/{r}/git/refs", status_code=201)
    async def create_ref(o: str, r: str, request: Request) -> Any:
        body = await request.json()
        repo = st.repos[f"{o}/{r}"]
        name = body["ref"].removeprefix("refs/heads/")
        if name in repo.branches:
            return _err(422, "Reference already exists")
        repo.branches[name] = body["sha"]
        return JSONResponse(get_ref(o, r, f"heads/{name}"), status_code=201)

    @app.post("/repos/{o}/{r}/check-runs", status_code=201)
    async def create_check(o: str, r: str, request: Request) -> Any:
        body = await request.json()
        with st.lock:
            cid = next(st.ids)
            st.check_runs[cid] = {**_check_shape(o, r, cid, body), "_repo": f"{o}/{r}"}
            return JSONResponse(_public(st.check_runs[cid]), status_code=201)

    @app.patch("/repos/{o}/{r}/check-runs/{cid}")
    async def update_check(o: str, r: str, cid: int, request: Request) -> Any:
        body = await request.json()
        with st.lock:
            cr = st.check_runs.get(cid)
            if cr is None:
                return _err(404, "Not Found")
            cr.update({k: v for k, v in body.items() if k != "output"})
            cr["output"].update(body.get("output", {}))
            return _public(cr)

    @app.get("/repos/{o}/{r}/commits/{ref}/check-runs")
    def list_checks(o: str, r: str, ref: str, check_name: str | None = None) -> Any:
        runs = [_public(c) for c in st.check_runs.values() if c["_repo"] == f"{o}/{r}" and c["head_sha"] == ref
                and (check_name is None or c["name"] == check_name)]
        return {"total_count": len(runs), "check_runs": runs}


def _check_shape(o: str, r: str, cid: int, body: dict[str, Any]) -> dict[str, Any]:
    out = body.get("output", {})
    return {
        "id": cid, "head_sha": body["head_sha"], "node_id": f"CR_{cid}", "external_id": body.get("external_id"),
        "url": f"{shapes.API}/repos/{o}/{r}/check-runs/{cid}", "html_url": f"{shapes.WEB}/{o}/{r}/runs/{cid}",
        "details_url": body.get("details_url"), "status": body.get("status", "queued"),
        "conclusion": body.get("conclusion"), "started_at": shapes.NOW, "completed_at": None, "name": body["name"],
        "output": {"title": out.get("title"), "summary": out.get("summary"), "text": out.get("text"),
                   "annotations_count": 0, "annotations_url": f"{shapes.API}/repos/{o}/{r}/check-runs/{cid}/annotations"},
        "check_suite": {"id": 1}, "app": None, "pull_requests": [],
    }


def _directory(o: str, r: str, path: str, files: dict[str, str]) -> list[dict[str, Any]]:
    """GitHub's listing of a directory: its immediate children, files and sub-directories."""
    children: dict[str, str] = {}
    for f in files:
        if f.startswith(path + "/"):
            head, _, rest = f[len(path) + 1 :].partition("/")
            children[head] = "dir" if rest else "file"
    out = []
    for name, kind in sorted(children.items()):
        full = f"{path}/{name}"
        u = f"{shapes.API}/repos/{o}/{r}/contents/{full}"
        size = len(files[full].encode()) if kind == "file" else 0
        out.append({"type": kind, "size": size, "name": name, "path": full, "sha": "0" * 40, "url": u,
                    "git_url": None, "html_url": None, "download_url": None,
                    "_links": {"self": u, "git": None, "html": None}})
    return out


def _public(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if not k.startswith("_")}
