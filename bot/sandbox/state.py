"""The sandbox's in-memory GitHub: repositories with commits and branches, issues/PRs, comments, labels,
reactions, check runs, collaborator roles, installation tokens, and a log of every API request."""

from __future__ import annotations

import hashlib
import itertools
import threading
from dataclasses import dataclass, field
from typing import Any

from bot.sandbox import shapes


@dataclass
class Repo:
    full_name: str
    id: int
    default_branch: str = "main"
    branches: dict[str, str] = field(default_factory=dict)
    commits: dict[str, dict[str, str]] = field(default_factory=dict)  # commit sha -> the whole tree (path -> text)
    parents: dict[str, list[str]] = field(default_factory=dict)  # commit sha -> parent shas (git data API, pushes)
    messages: dict[str, str] = field(default_factory=dict)
    trees: dict[str, dict[str, str]] = field(default_factory=dict)  # tree sha -> files (POST git/trees)


@dataclass
class Thread:
    """An issue or a pull request (they share numbering, as on GitHub)."""

    repo: str
    number: int
    title: str
    body: str | None
    author: str
    labels: list[str] = field(default_factory=list)
    state: str = "open"
    pull: dict[str, Any] | None = None  # head_ref, head_sha, base_ref, base_sha, draft, fork_owner


@dataclass
class Fault:
    method: str
    path_contains: str
    status: int
    headers: dict[str, str]
    times: int


class SandboxState:
    def __init__(self, bot_login: str = "openlab[bot]", app_id: int = 1) -> None:
        self.lock = threading.RLock()
        self.ids = itertools.count(1000)
        self.users: dict[str, dict[str, Any]] = {}
        self.repos: dict[str, Repo] = {}
        self.threads: dict[tuple[str, int], Thread] = {}
        self.comments: dict[int, dict[str, Any]] = {}
        self.reactions: list[dict[str, Any]] = []
        self.check_runs: dict[int, dict[str, Any]] = {}
        self.roles: dict[tuple[str, str], str] = {}
        self.tokens: dict[str, str] = {}  # token -> login it acts as
        self.app_id = app_id
        self.app_public_key: str | None = None
        self.bot_login = bot_login
        self.requests: list[dict[str, Any]] = []
        self.faults: list[Fault] = []
        self.latency_s = 0.0
        self.hook_url: str | None = None  # where deliveries go (redeliveries of hooks.py)
        self.hook_secret: str | None = None
        self.hook_deliveries: list[dict[str, Any]] = []  # the App's delivery log, oldest first
        self.hook_ids = itertools.count(90_000)
        self.teams: dict[tuple[str, str], dict[str, Any]] = {}  # (org, slug) -> {"members": {login: role}, "repos": {repo: permission}}
        self.user(bot_login, kind="Bot")

    def user(self, login: str, kind: str = "User") -> dict[str, Any]:
        if login not in self.users:
            self.users[login] = shapes.user(login, next(self.ids), "Bot" if login.endswith("[bot]") else kind)
        return self.users[login]

    def repo_shape(self, full_name: str) -> dict[str, Any]:
        r = self.repos[full_name]
        return shapes.repository(full_name, r.id, self.user(full_name.split("/")[0]), r.default_branch)

    def create_repo(self, full_name: str, files: dict[str, str], default_branch: str = "main") -> Repo:
        repo = Repo(full_name, next(self.ids), default_branch)
        self.repos[full_name] = repo
        self.commit(full_name, default_branch, files, parent=None)
        return repo

    def commit(self, full_name: str, branch: str, files: dict[str, str], parent: str | None,
               message: str = "") -> str:
        repo = self.repos[full_name]
        before = parent or repo.branches.get(branch, "")
        base = dict(repo.commits.get(before, {}))
        base.update(files)
        sha = hashlib.sha1(f"{full_name}:{branch}:{next(self.ids)}".encode()).hexdigest()
        repo.commits[sha] = base
        repo.parents[sha] = [before] if before in repo.commits else []
        repo.messages[sha] = message
        repo.branches[branch] = sha
        return sha

    def resolve(self, full_name: str, ref: str | None) -> dict[str, str] | None:
        repo = self.repos[full_name]
        ref = ref or repo.default_branch
        sha = repo.branches.get(ref.removeprefix("refs/heads/"), ref)
        return repo.commits.get(sha)

    def labels_of(self, t: Thread) -> list[dict[str, Any]]:
        return [shapes.label(n, abs(hash(n)) % 10_000) for n in t.labels]

    def issue_shape(self, t: Thread) -> dict[str, Any]:
        n = sum(1 for c in self.comments.values() if c["_thread"] == (t.repo, t.number))
        return shapes.issue(t.repo, t.number, t.title, t.body, self.user(t.author), self.labels_of(t), t.state, n,
                            t.pull is not None)

    def pull_shape(self, t: Thread) -> dict[str, Any]:
        p = t.pull or {}
        base_repo = self.repo_shape(t.repo)
        head_owner = p.get("fork_owner") or t.repo.split("/")[0]
        head_repo = dict(base_repo, full_name=f"{head_owner}/{t.repo.split('/')[1]}", fork=bool(p.get("fork_owner")),
                         owner=self.user(head_owner), id=base_repo["id"] + (1 if p.get("fork_owner") else 0))
        head = shapes.branch_ref(f"{head_owner}:{p['head_ref']}", p["head_ref"], p["head_sha"], self.user(head_owner),
                                 head_repo)
        base = shapes.branch_ref(f"{t.repo.split('/')[0]}:{p['base_ref']}", p["base_ref"], p["base_sha"],
                                 self.user(t.repo.split("/")[0]), base_repo)
        return shapes.pull(t.repo, t.number, t.title, t.body, self.user(t.author), self.labels_of(t), t.state,
                           p.get("draft", False), head, base)

    def pull_files(self, t: Thread) -> list[dict[str, Any]]:
        p = t.pull or {}
        repo = self.repos[t.repo]
        base, head = repo.commits[p["base_sha"]], repo.commits[p["head_sha"]]
        out = []
        for path in sorted(set(base) | set(head)):
            if base.get(path) == head.get(path):
                continue
            status = "added" if path not in base else "removed" if path not in head else "modified"
            sha = hashlib.sha1((head.get(path) or "").encode()).hexdigest()
            out.append({"sha": sha, "filename": path, "status": status, "additions": 1, "deletions": 0, "changes": 1,
                        "blob_url": f"{shapes.WEB}/{t.repo}/blob/{p['head_sha']}/{path}",
                        "raw_url": f"{shapes.WEB}/{t.repo}/raw/{p['head_sha']}/{path}",
                        "contents_url": f"{shapes.API}/repos/{t.repo}/contents/{path}?ref={p['head_sha']}"})
        return out

    def next_number(self, repo: str) -> int:
        return 1 + max((n for (r, n) in self.threads if r == repo), default=0)

    def take_fault(self, method: str, path: str) -> Fault | None:
        for f in self.faults:
            if f.times > 0 and f.method == method and f.path_contains in path:
                f.times -= 1
                return f
        return None
