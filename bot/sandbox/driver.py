"""Drive a bot the way GitHub would: act on the sandbox as a user, then deliver the matching webhook, signed.

    d = SandboxDriver(sandbox_url, bot_url, secret)
    d.setup_repo("lab/openlab", files={...}, roles={"maintainer": "write"})
    n = d.open_issue("lab/openlab", "alice", "[Experiment]: wider MLP", body, labels=["experiment"])
    pr = d.open_pull("lab/openlab", "alice", "exp-7", {"experiments/exp007_wider.py": "..."}, "Wider", body)
    d.comment("lab/openlab", pr, "maintainer", "/run")
    d.push("lab/openlab", pr, "alice", {...});  d.add_label(...);  d.redeliver(guid)
    d.thread("lab/openlab", pr) -> labels, comments, reactions, check runs on the head SHA

Payloads carry what GitHub's do for these events (action, the object, repository, sender, installation); the
tests check them against GitHub's published webhook schemas.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx

from bot.ingress.app import sign


class SandboxDriver:
    def __init__(self, sandbox_url: str, bot_url: str | None, secret: str, installation_id: int = 1) -> None:
        self.sandbox = httpx.Client(base_url=sandbox_url, timeout=30)
        self.bot_url = bot_url
        self.secret = secret.encode()
        self.installation_id = installation_id
        self.sent: dict[str, tuple[str, bytes]] = {}
        self._bot = httpx.Client(timeout=30)

    # -- webhook delivery --------------------------------------------------------------------------------------
    def deliver(self, event: str, payload: dict[str, Any], guid: str | None = None,
                secret: bytes | None = None) -> httpx.Response:
        """POST a signed webhook to the bot and log it in the App's delivery log, as GitHub does. A bot that cannot
        be reached is logged as a failed delivery (recovery redelivers it) and the connection error re-raised."""
        guid = guid or str(uuid.uuid4())
        body = json.dumps(payload).encode()
        self.sent[guid] = (event, body)
        inst = (payload.get("installation") or {}).get("id") if isinstance(payload.get("installation"), dict) else None
        logged = {"guid": guid, "event": event, "action": payload.get("action"), "body": body.decode(),
                  "installation_id": inst}
        try:
            resp = self.post_raw(event, body, guid, sign(secret or self.secret, body))
        except httpx.TransportError:
            self._ctl("hook/deliveries", **logged, status_code=0)
            raise
        self._ctl("hook/deliveries", **logged, status_code=resp.status_code)
        return resp

    def post_raw(self, event: str, body: bytes, guid: str, signature: str | None) -> httpx.Response:
        headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": guid, "Content-Type": "application/json",
                   "User-Agent": "GitHub-Hookshot/sandbox"}
        if signature:
            headers["X-Hub-Signature-256"] = signature
        assert self.bot_url, "no bot_url"
        return self._bot.post(self.bot_url, content=body, headers=headers)

    def redeliver(self, guid: str) -> httpx.Response:
        event, body = self.sent[guid]
        return self.post_raw(event, body, guid, sign(self.secret, body))

    def _ctl(self, path: str, **body: Any) -> dict[str, Any]:
        r = self.sandbox.post(f"/_sandbox/{path}", json=body)
        r.raise_for_status()
        return r.json()

    def _send(self, event: str, action: str, env: dict[str, Any], **extra: Any) -> tuple[dict[str, Any], str]:
        payload = {"action": action, **{k: v for k, v in env.items() if k != "number"}, **extra,
                   "installation": {"id": self.installation_id, "node_id": "MDIz"}}
        guid = str(uuid.uuid4())
        if self.bot_url:
            try:
                resp = self.deliver(event, payload, guid)
            except httpx.TransportError:
                return payload, guid  # the bot is down: GitHub logs the failure and the user sees nothing
            if resp.status_code >= 300:
                raise RuntimeError(f"bot answered {resp.status_code}: {resp.text}")
        return payload, guid

    # -- acting as users -------------------------------------------------------------------------------------
    def setup_repo(self, repo: str, files: dict[str, str], roles: dict[str, str] | None = None,
                   tokens: dict[str, str] | None = None, **extra: Any) -> None:
        self._ctl("setup", repo=repo, files=files, roles=roles or {}, tokens=tokens or {}, **extra)

    def hook_log(self) -> list[dict[str, Any]]:
        """The App's delivery log (every attempt, oldest first)."""
        return self.sandbox.get("/_sandbox/hook/deliveries").json()

    def configure(self, **settings: Any) -> None:
        self._ctl("setup", **settings)

    def fault(self, method: str, path_contains: str, status: int, headers: dict[str, str] | None = None,
              times: int = 1) -> None:
        self._ctl("faults", method=method, path_contains=path_contains, status=status, headers=headers or {},
                  times=times)

    def open_issue(self, repo: str, user: str, title: str, body: str, labels: list[str] | None = None) -> int:
        env = self._ctl("issues", repo=repo, user=user, title=title, body=body, labels=labels or [])
        self._send("issues", "opened", env)
        return int(env["issue"]["number"])

    def edit_issue(self, repo: str, number: int, user: str, body: str) -> None:
        env = self._ctl("issues/edit", repo=repo, number=number, user=user, body=body)
        self._send("issues", "edited", env)

    def open_pull(self, repo: str, user: str, branch: str, files: dict[str, str], title: str, body: str = "",
                  fork_owner: str | None = None, draft: bool = False) -> int:
        env = self._ctl("pulls", repo=repo, user=user, branch=branch, files=files, title=title, body=body,
                        fork_owner=fork_owner, draft=draft)
        self._send("pull_request", "opened", env, number=env["number"])
        return int(env["number"])

    def push(self, repo: str, number: int, user: str, files: dict[str, str]) -> str:
        env = self._ctl("push", repo=repo, number=number, user=user, files=files)
        self._send("pull_request", "synchronize", env, number=number, before=env["before"], after=env["after"])
        return str(env["after"])

    def ready_for_review(self, repo: str, number: int, user: str, draft: bool = False) -> str:
        """Mark the PR ready for review (or, with ``draft=True``, convert it to a draft); returns the delivery id."""
        env = self._ctl("pulls/draft", repo=repo, number=number, user=user, draft=draft)
        _, guid = self._send("pull_request", "converted_to_draft" if draft else "ready_for_review", env, number=number)
        return guid

    def comment(self, repo: str, number: int, user: str, body: str) -> tuple[int, str]:
        env = self._ctl("comments", repo=repo, number=number, user=user, body=body)
        _, guid = self._send("issue_comment", "created", env)
        return int(env["comment"]["id"]), guid

    def add_label(self, repo: str, number: int, user: str, label: str, remove: bool = False) -> str:
        env = self._ctl("labels", repo=repo, number=number, user=user, label=label, remove=remove)
        event = "pull_request" if "pull_request" in env else "issues"
        extra = {"number": number} if event == "pull_request" else {}
        _, guid = self._send(event, "unlabeled" if remove else "labeled", env, **extra)
        return guid

    def rerun_check(self, repo: str, user: str, check_run_id: int | None = None, head_sha: str | None = None) -> str:
        """Press "Re-run" on one check run, or "Re-run all checks" on the commit's suite; returns the delivery id."""
        which = {"check_run_id": check_run_id} if check_run_id is not None else {"head_sha": head_sha}
        env = self._ctl("checks/rerequest", repo=repo, user=user, **which)
        event = env.pop("event")
        _, guid = self._send(event, "rerequested", env)
        return guid

    # -- looking --------------------------------------------------------------------------------------------
    def thread(self, repo: str, number: int) -> dict[str, Any]:
        return self.sandbox.get(f"/_sandbox/threads/{repo}/{number}").json()

    def repo_state(self, repo: str) -> dict[str, Any]:
        return self.sandbox.get(f"/_sandbox/repos/{repo}").json()

    def requests(self) -> list[dict[str, Any]]:
        return self.sandbox.get("/_sandbox/requests").json()

    def wait_for(self, predicate: Any, timeout: float = 30.0, interval: float = 0.1) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError("condition not reached in time")
            time.sleep(interval)
