"""Control API of the sandbox (`/_sandbox/...`): what a test or the demo does "as a user on github.com"
(open an issue, push to a PR, comment, add a label), returning the objects a webhook about it carries, plus
inspection (threads, request log) and fault injection. The driver (driver.py) wraps it."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request

from bot.sandbox import shapes
from bot.sandbox.state import Fault, SandboxState, Thread


def add_control_routes(app: FastAPI, st: SandboxState) -> None:
    @app.post("/_sandbox/setup")
    async def setup(request: Request) -> Any:
        b = await request.json()
        with st.lock:
            if "repo" in b:
                st.create_repo(b["repo"], b.get("files", {}), b.get("default_branch", "main"))
            for user, role in b.get("roles", {}).items():
                st.roles[(b["repo"], user)] = role
            for token, login in b.get("tokens", {}).items():
                st.tokens[token] = login
            if "app_public_key" in b:
                st.app_public_key = b["app_public_key"]
                st.app_id = b.get("app_id", st.app_id)
            if "latency_s" in b:
                st.latency_s = float(b["latency_s"])
            if "hook_url" in b:
                st.hook_url, st.hook_secret = b["hook_url"], b.get("hook_secret")
            for t in b.get("teams", []):  # {"org", "slug", "members": {login: member|maintainer}, "repos": {repo: role}}
                st.teams[(t["org"], t["slug"])] = {"members": dict(t.get("members", {})), "repos": dict(t.get("repos", {}))}
        return {"ok": True}

    @app.post("/_sandbox/faults")
    async def faults(request: Request) -> Any:
        b = await request.json()
        with st.lock:
            st.faults.append(Fault(b["method"], b["path_contains"], b["status"], b.get("headers", {}), b.get("times", 1)))
        return {"ok": True}

    @app.post("/_sandbox/issues")
    async def open_issue(request: Request) -> Any:
        b = await request.json()
        with st.lock:
            n = st.next_number(b["repo"])
            t = Thread(b["repo"], n, b["title"], b.get("body"), b["user"], list(b.get("labels", [])))
            st.threads[(b["repo"], n)] = t
            return _envelope(st, b["repo"], b["user"], issue=st.issue_shape(t))

    @app.post("/_sandbox/issues/edit")
    async def edit_issue(request: Request) -> Any:
        b = await request.json()
        with st.lock:
            t = st.threads[(b["repo"], b["number"])]
            old = t.body
            t.body = b["body"]
            return _envelope(st, b["repo"], b["user"], issue=st.issue_shape(t), changes={"body": {"from": old or ""}})

    @app.post("/_sandbox/pulls")
    async def open_pull(request: Request) -> Any:
        b = await request.json()
        with st.lock:
            repo = st.repos[b["repo"]]
            base_sha = repo.branches[repo.default_branch]
            head_sha = st.commit(b["repo"], b["branch"], b.get("files", {}), parent=base_sha)
            n = st.next_number(b["repo"])
            t = Thread(b["repo"], n, b["title"], b.get("body"), b["user"], pull={
                "head_ref": b["branch"], "head_sha": head_sha, "base_ref": repo.default_branch, "base_sha": base_sha,
                "draft": bool(b.get("draft")), "fork_owner": b.get("fork_owner")})
            st.threads[(b["repo"], n)] = t
            return _envelope(st, b["repo"], b["user"], number=n, pull_request=st.pull_shape(t))

    @app.post("/_sandbox/push")
    async def push(request: Request) -> Any:
        b = await request.json()
        with st.lock:
            t = st.threads[(b["repo"], b["number"])]
            assert t.pull is not None
            before = t.pull["head_sha"]
            t.pull["head_sha"] = st.commit(b["repo"], t.pull["head_ref"], b.get("files", {}), parent=before)
            return _envelope(st, b["repo"], b["user"], number=t.number, pull_request=st.pull_shape(t),
                             before=before, after=t.pull["head_sha"])

    @app.post("/_sandbox/pulls/draft")
    async def set_draft(request: Request) -> Any:
        """Mark a PR ready for review (``draft: false``) or convert it to a draft (``draft: true``)."""
        b = await request.json()
        with st.lock:
            t = st.threads[(b["repo"], b["number"])]
            assert t.pull is not None
            t.pull["draft"] = bool(b["draft"])
            return _envelope(st, b["repo"], b["user"], number=t.number, pull_request=st.pull_shape(t))

    @app.post("/_sandbox/comments")
    async def comment(request: Request) -> Any:
        b = await request.json()
        with st.lock:
            t = st.threads[(b["repo"], b["number"])]
            cid = next(st.ids)
            c = shapes.comment(b["repo"], cid, t.number, b["body"], st.user(b["user"]))
            st.comments[cid] = {**c, "_thread": (b["repo"], t.number)}
            return _envelope(st, b["repo"], b["user"], issue=st.issue_shape(t), comment=c)

    @app.post("/_sandbox/labels")
    async def label(request: Request) -> Any:
        b = await request.json()
        with st.lock:
            t = st.threads[(b["repo"], b["number"])]
            if b.get("remove"):
                if b["label"] in t.labels:
                    t.labels.remove(b["label"])
            elif b["label"] not in t.labels:
                t.labels.append(b["label"])
            lab = shapes.label(b["label"], abs(hash(b["label"])) % 10_000)
            if t.pull is not None:
                return _envelope(st, b["repo"], b["user"], number=t.number, pull_request=st.pull_shape(t), label=lab)
            return _envelope(st, b["repo"], b["user"], issue=st.issue_shape(t), label=lab)

    @app.get("/_sandbox/threads/{o}/{r}/{n}")
    def thread(o: str, r: str, n: int) -> Any:
        with st.lock:
            t = st.threads[(f"{o}/{r}", n)]
            cs = [c for c in st.comments.values() if c["_thread"] == (f"{o}/{r}", n)]
            ids = {c["id"] for c in cs}
            head = (t.pull or {}).get("head_sha")
            return {
                "labels": list(t.labels), "state": t.state, "head_sha": head, "title": t.title, "body": t.body,
                "comments": [{"id": c["id"], "body": c["body"], "user": c["user"]["login"]} for c in cs],
                "reactions": [{"comment_id": x["_comment"], "content": x["content"], "user": x["user"]["login"]}
                              for x in st.reactions if x["_comment"] in ids],
                "check_runs": [{k: v for k, v in c.items() if not k.startswith("_")} for c in st.check_runs.values()
                               if c["_repo"] == f"{o}/{r}" and head and c["head_sha"] == head],
            }

    @app.get("/_sandbox/repos/{o}/{r}")
    def repo(o: str, r: str) -> Any:
        with st.lock:
            rp = st.repos[f"{o}/{r}"]
            pulls = [t.number for (name, _), t in st.threads.items() if name == rp.full_name and t.pull]
            return {"branches": dict(rp.branches), "pulls": pulls,
                    "files": {b: st.resolve(rp.full_name, b) for b in rp.branches}}

    @app.get("/_sandbox/requests")
    def requests_log() -> Any:
        with st.lock:
            return list(st.requests)


def _envelope(st: SandboxState, repo: str, sender: str, **objects: Any) -> dict[str, Any]:
    return {**objects, "repository": st.repo_shape(repo), "sender": st.user(sender)}
