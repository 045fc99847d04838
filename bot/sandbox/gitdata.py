"""The sandbox's Git database API (trees, commits, moving a branch): what a client needs to push several files as
one commit, the way the bot commits a run's results, metrics and chart together.

Shapes follow GitHub's OpenAPI description (tests/bot/test_github_conformance.py checks the bot's requests and the
sandbox's answers). Trees are whole snapshots (path -> text), as the sandbox's commits are; blob and tree shas are
computed the way git computes a blob's, so the same content has the same sha.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from bot.sandbox import shapes
from bot.sandbox.state import Repo, SandboxState


def _err(status: int, message: str) -> JSONResponse:
    return JSONResponse({"message": message, "documentation_url": "https://docs.github.com/rest/git"},
                        status_code=status)


def blob_sha(text: str) -> str:
    data = text.encode()
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def tree_sha(files: dict[str, str]) -> str:
    listing = json.dumps(sorted((p, blob_sha(t)) for p, t in files.items()))
    return hashlib.sha1(b"tree " + listing.encode()).hexdigest()


def _tree_shape(o: str, r: str, sha: str, files: dict[str, str]) -> dict[str, Any]:
    api = f"{shapes.API}/repos/{o}/{r}/git"
    entries = [{"path": p, "mode": "100644", "type": "blob", "sha": blob_sha(t), "size": len(t.encode()),
                "url": f"{api}/blobs/{blob_sha(t)}"} for p, t in sorted(files.items())]
    return {"sha": sha, "url": f"{api}/trees/{sha}", "tree": entries, "truncated": False}


def _commit_shape(o: str, r: str, repo: Repo, sha: str) -> dict[str, Any]:
    api, web = f"{shapes.API}/repos/{o}/{r}", f"{shapes.WEB}/{o}/{r}"
    tree = tree_sha(repo.commits[sha])
    person = {"name": "openlab sandbox", "email": "sandbox@openlab.invalid", "date": shapes.NOW}
    return {
        "sha": sha, "node_id": f"C_{sha[:12]}", "url": f"{api}/git/commits/{sha}", "html_url": f"{web}/commit/{sha}",
        "author": person, "committer": person, "message": repo.messages.get(sha, ""),
        "tree": {"sha": tree, "url": f"{api}/git/trees/{tree}"},
        "parents": [{"sha": p, "url": f"{api}/git/commits/{p}", "html_url": f"{web}/commit/{p}"}
                    for p in repo.parents.get(sha, [])],
        "verification": {"verified": False, "reason": "unsigned", "signature": None, "payload": None,
                         "verified_at": None},
    }


def _ancestors(repo: Repo, sha: str) -> set[str]:
    seen, todo = set(), [sha]
    while todo:
        s = todo.pop()
        if s not in seen:
            seen.add(s)
            todo.extend(repo.parents.get(s, []))
    return seen


def add_git_data_routes(app: FastAPI, st: SandboxState) -> None:
    @app.get("/repos/{o}/{r}/git/commits/{sha}")
    def get_commit(o: str, r: str, sha: str) -> Any:
        repo = st.repos.get(f"{o}/{r}")
        if repo is None or sha not in repo.commits:
            return _err(404, "Not Found")
        return _commit_shape(o, r, repo, sha)

    @app.post("/repos/{o}/{r}/git/trees", status_code=201)
    async def create_tree(o: str, r: str, request: Request) -> Any:
        body = await request.json()
        repo = st.repos.get(f"{o}/{r}")
        if repo is None:
            return _err(404, "Not Found")
        with st.lock:
            for files in repo.commits.values():  # every commit's tree is addressable, as in git
                repo.trees.setdefault(tree_sha(files), files)
            base = body.get("base_tree")
            if base is not None and base not in repo.trees:
                return _err(422, "base_tree is not a valid tree")
            files = dict(repo.trees.get(base, {}))
            for entry in body.get("tree") or []:
                if entry.get("type") != "blob" or not isinstance(entry.get("content"), str) or not entry.get("path"):
                    return _err(422, "the sandbox takes blob entries with inline content only")
                files[entry["path"]] = entry["content"]
            sha = tree_sha(files)
            repo.trees[sha] = files
            return JSONResponse(_tree_shape(o, r, sha, files), status_code=201)

    @app.post("/repos/{o}/{r}/git/commits", status_code=201)
    async def create_commit(o: str, r: str, request: Request) -> Any:
        body = await request.json()
        repo = st.repos.get(f"{o}/{r}")
        if repo is None:
            return _err(404, "Not Found")
        with st.lock:
            parents = list(body.get("parents") or [])
            if body.get("tree") not in repo.trees or any(p not in repo.commits for p in parents):
                return _err(422, "Tree SHA does not exist" if body.get("tree") not in repo.trees
                            else "Parent SHA does not exist")
            sha = hashlib.sha1(f"{o}/{r}:commit:{next(st.ids)}".encode()).hexdigest()
            repo.commits[sha] = dict(repo.trees[body["tree"]])
            repo.parents[sha] = parents
            repo.messages[sha] = str(body.get("message", ""))
            return JSONResponse(_commit_shape(o, r, repo, sha), status_code=201)

    @app.patch("/repos/{o}/{r}/git/refs/{ref:path}")
    async def update_ref(o: str, r: str, ref: str, request: Request) -> Any:
        body = await request.json()
        repo = st.repos.get(f"{o}/{r}")
        name = ref.removeprefix("heads/")
        if repo is None or name not in repo.branches:
            return _err(422, "Reference does not exist")
        with st.lock:
            if body.get("sha") not in repo.commits:
                return _err(422, "Object does not exist")
            if not body.get("force") and repo.branches[name] not in _ancestors(repo, body["sha"]):
                return _err(422, "Update is not a fast forward")
            repo.branches[name] = body["sha"]
        api = f"{shapes.API}/repos/{o}/{r}/git"
        return {"ref": f"refs/heads/{name}", "node_id": "REF_1", "url": f"{api}/refs/heads/{name}",
                "object": {"type": "commit", "sha": body["sha"], "url": f"{api}/commits/{body['sha']}"}}
