"""The one place the bot talks to GitHub's REST API (requests; tests use `responses` or the local sandbox).

Rate-limit protocol (GitHub's "rate limits for the REST API" page, github-bots.md §5.4):
- primary limit (403/429 with ``x-ratelimit-remaining: 0``): wait until ``x-ratelimit-reset``;
- secondary limit (403/429 otherwise): honour ``retry-after``; without it wait ``secondary_wait_s`` (GitHub says at
  least one minute), doubling on each further hit;
- 5xx and connection errors: exponential backoff from ``backoff_s``;
- give up after ``max_retries`` and raise :class:`GitHubError` (the worker keeps the delivery queued and retries);
  a wait longer than ``max_wait_s`` is not slept through in-process: it raises :class:`RateLimited` at once;
- writes (POST/PATCH/PUT/DELETE) are paced ``write_interval_s`` apart (GitHub asks for about one per second).
Bodies are cut below 65,536 characters by the executor before they get here.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import requests

WRITE_METHODS = {"POST", "PATCH", "PUT", "DELETE"}
PERMISSION_ORDER = ["none", "read", "triage", "write", "maintain", "admin"]


class GitHubError(Exception):
    def __init__(self, status: int, method: str, path: str, message: str) -> None:
        super().__init__(f"GitHub {method} {path} -> {status}: {message}")
        self.status = status


class RateLimited(GitHubError):
    def __init__(self, method: str, path: str, wait_s: float) -> None:
        super().__init__(429, method, path, f"rate limited for {wait_s:.0f}s more")
        self.wait_s = wait_s


class GitHubClient:
    def __init__(
        self,
        base_url: str,
        token: Callable[[], str],
        *,
        write_interval_s: float = 1.0,
        secondary_wait_s: float = 60.0,
        backoff_s: float = 1.0,
        max_retries: int = 4,
        max_wait_s: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
        on_limited: Callable[[int], None] | None = None,
        timeout_s: float = 20.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._token = token
        self.write_interval_s = write_interval_s
        self.secondary_wait_s = secondary_wait_s
        self.backoff_s = backoff_s
        self.max_retries = max_retries
        self.max_wait_s = max_wait_s
        self._sleep = sleep
        self._on_limited = on_limited or (lambda status: None)
        self._timeout = timeout_s
        self._session = requests.Session()
        self._write_lock = threading.Lock()
        self._last_write = 0.0

    # -- transport ---------------------------------------------------------------------------------------------
    def request(self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None,
                ok_404: bool = False, with_cursor: bool = False) -> Any:
        """The JSON answer; with ``with_cursor``, ``(answer, cursor of the Link header's next page or None)``."""
        method = method.upper()
        secondary_wait = self.secondary_wait_s
        for attempt in range(self.max_retries + 1):
            if method in WRITE_METHODS:
                self._pace()
            try:
                resp = self._session.request(
                    method, self.base_url + path, json=json, params=params, timeout=self._timeout,
                    headers={"Authorization": f"Bearer {self._token()}", "Accept": "application/vnd.github+json",
                             "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "openlab-bot"},
                )
            except requests.RequestException as err:
                if attempt == self.max_retries:
                    raise GitHubError(0, method, path, f"connection failed: {err}") from None
                self._wait(method, path, self.backoff_s * 2**attempt)
                continue
            status = resp.status_code
            if status in (403, 429) and self._is_rate_limit(resp):
                self._on_limited(status)
                if attempt == self.max_retries:
                    raise RateLimited(method, path, self._limit_wait(resp, secondary_wait))
                self._wait(method, path, self._limit_wait(resp, secondary_wait))
                if resp.headers.get("x-ratelimit-remaining") != "0" and "retry-after" not in resp.headers:
                    secondary_wait *= 2
                continue
            if status >= 500:
                if attempt == self.max_retries:
                    raise GitHubError(status, method, path, _message(resp))
                self._wait(method, path, self.backoff_s * 2**attempt)
                continue
            if status == 404 and ok_404:
                return None
            if status >= 400:
                raise GitHubError(status, method, path, _message(resp))
            body = resp.json() if resp.content else None
            return (body, _next_cursor(resp)) if with_cursor else body
        raise AssertionError("unreachable")

    def _pace(self) -> None:
        with self._write_lock:
            wait = self._last_write + self.write_interval_s - time.monotonic()
            if wait > 0:
                self._sleep(wait)
            self._last_write = time.monotonic()

    def _wait(self, method: str, path: str, seconds: float) -> None:
        if seconds > self.max_wait_s:
            raise RateLimited(method, path, seconds)
        self._sleep(max(0.0, seconds))

    @staticmethod
    def _is_rate_limit(resp: requests.Response) -> bool:
        if resp.status_code == 429 or "retry-after" in resp.headers or resp.headers.get("x-ratelimit-remaining") == "0":
            return True
        return "rate limit" in resp.text.lower()

    @staticmethod
    def _limit_wait(resp: requests.Response, secondary_wait: float) -> float:
        if "retry-after" in resp.headers:
            try:
                return float(resp.headers["retry-after"])
            except ValueError:
                return secondary_wait
        if resp.headers.get("x-ratelimit-remaining") == "0" and "x-ratelimit-reset" in resp.headers:
            return max(0.0, float(resp.headers["x-ratelimit-reset"]) - time.time()) + 1.0
        return secondary_wait

    def paginate(self, path: str, params: dict[str, Any] | None = None, limit_pages: int = 30) -> list[Any]:
        out: list[Any] = []
        for page in range(1, limit_pages + 1):
            chunk = self.request("GET", path, params={**(params or {}), "per_page": 100, "page": page})
            out.extend(chunk)
            if len(chunk) < 100:
                break
        return out

    # -- endpoints (each one an operation of GitHub's OpenAPI description; tests check this) ---------------------
    def permission(self, repo: str, user: str) -> str:
        """The user's role on the repo (`role_name` first: the legacy `permission` folds maintain/triage)."""
        data = self.request("GET", f"/repos/{repo}/collaborators/{quote(user)}/permission", ok_404=True)
        if not data:
            return "none"
        role = data.get("role_name") or data.get("permission") or "none"
        return role if role in PERMISSION_ORDER else data.get("permission", "none")

    def get_contents(self, repo: str, path: str, ref: str | None = None) -> str | None:
        data = self.request("GET", f"/repos/{repo}/contents/{quote(path)}", params={"ref": ref} if ref else None,
                            ok_404=True)
        if not data or isinstance(data, list) or data.get("type") != "file":
            return None
        return base64.b64decode(data.get("content", "")).decode("utf-8", errors="replace")

    def list_dir(self, repo: str, path: str, ref: str | None = None) -> list[dict[str, Any]]:
        """The immediate entries of a directory at ``ref`` (``type``, ``path``, ``size``); [] if it is none."""
        data = self.request("GET", f"/repos/{repo}/contents/{quote(path)}", params={"ref": ref} if ref else None,
                            ok_404=True)
        return data if isinstance(data, list) else []

    def get_issue(self, repo: str, number: int) -> dict[str, Any] | None:
        return self.request("GET", f"/repos/{repo}/issues/{number}", ok_404=True)

    def get_pull(self, repo: str, number: int) -> dict[str, Any]:
        return self.request("GET", f"/repos/{repo}/pulls/{number}")

    def pull_files(self, repo: str, number: int) -> list[dict[str, Any]]:
        return self.paginate(f"/repos/{repo}/pulls/{number}/files")

    def issue_comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        return self.paginate(f"/repos/{repo}/issues/{number}/comments")

    def create_comment(self, repo: str, number: int, body: str) -> dict[str, Any]:
        return self.request("POST", f"/repos/{repo}/issues/{number}/comments", json={"body": body})

    def update_comment(self, repo: str, comment_id: int, body: str) -> dict[str, Any] | None:
        return self.request("PATCH", f"/repos/{repo}/issues/comments/{comment_id}", json={"body": body}, ok_404=True)

    def add_labels(self, repo: str, number: int, labels: list[str]) -> None:
        self.request("POST", f"/repos/{repo}/issues/{number}/labels", json={"labels": labels})

    def remove_label(self, repo: str, number: int, label: str) -> None:
        self.request("DELETE", f"/repos/{repo}/issues/{number}/labels/{quote(label, safe='')}", ok_404=True)

    def react(self, repo: str, comment_id: int, content: str) -> None:
        self.request("POST", f"/repos/{repo}/issues/comments/{comment_id}/reactions", json={"content": content})

    def create_check_run(self, repo: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.request("POST", f"/repos/{repo}/check-runs", json=body)

    def update_check_run(self, repo: str, check_run_id: int, body: dict[str, Any]) -> dict[str, Any] | None:
        return self.request("PATCH", f"/repos/{repo}/check-runs/{check_run_id}", json=body, ok_404=True)

    def check_runs_for_ref(self, repo: str, ref: str, name: str) -> list[dict[str, Any]]:
        data = self.request("GET", f"/repos/{repo}/commits/{ref}/check-runs", params={"check_name": name})
        return list(data.get("check_runs", []))

    def get_branch_sha(self, repo: str, branch: str) -> str | None:
        data = self.request("GET", f"/repos/{repo}/git/ref/heads/{quote(branch)}", ok_404=True)
        return data["object"]["sha"] if data else None

    def create_branch(self, repo: str, branch: str, sha: str) -> None:
        self.request("POST", f"/repos/{repo}/git/refs", json={"ref": f"refs/heads/{branch}", "sha": sha})

    def put_file(self, repo: str, path: str, content: str, branch: str, message: str) -> None:
        body = {"message": message, "content": base64.b64encode(content.encode()).decode(), "branch": branch}
        self.request("PUT", f"/repos/{repo}/contents/{quote(path)}", json=body)

    def find_pull(self, repo: str, owner: str, branch: str) -> dict[str, Any] | None:
        pulls = self.request("GET", f"/repos/{repo}/pulls", params={"head": f"{owner}:{branch}", "state": "all"})
        return pulls[0] if pulls else None

    def create_pull(self, repo: str, *, title: str, head: str, base: str, body: str, draft: bool) -> dict[str, Any]:
        return self.request("POST", f"/repos/{repo}/pulls",
                            json={"title": title, "head": head, "base": base, "body": body, "draft": draft})

    # -- App-level endpoints (App JWT as the token; recovery.py) and teams (trust.py) -------------------------
    def hook_deliveries(self, cursor: str | None = None, status: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """One page (newest first) of the App's webhook delivery log and the cursor of the next page."""
        params: dict[str, Any] = {"per_page": 100, **({"cursor": cursor} if cursor else {}),
                                  **({"status": status} if status else {})}
        data, nxt = self.request("GET", "/app/hook/deliveries", params=params, with_cursor=True)
        return list(data or []), nxt

    def redeliver(self, delivery_id: int) -> None:
        self.request("POST", f"/app/hook/deliveries/{int(delivery_id)}/attempts")

    def team_membership(self, org: str, team_slug: str, user: str) -> str | None:
        """The user's membership state in the team (``active``/``pending``), or None if not a member."""
        data = self.request("GET", f"/orgs/{quote(org)}/teams/{quote(team_slug)}/memberships/{quote(user)}",
                            ok_404=True)
        return str(data.get("state")) if data else None

    def pulls_for_sha(self, repo: str, sha: str) -> list[dict[str, Any]]:
        """Open PRs whose head is ``sha`` (a check suite's ``pull_requests`` is empty for forks)."""
        return [p for p in self.paginate(f"/repos/{repo}/pulls", {"state": "open"}, limit_pages=10)
                if (p.get("head") or {}).get("sha") == sha]


def _next_cursor(resp: requests.Response) -> str | None:
    """The ``cursor`` of the ``rel="next"`` Link (cursor-paged endpoints such as the App's delivery log)."""
    url = resp.links.get("next", {}).get("url")
    values = parse_qs(urlsplit(url).query).get("cursor") if url else None
    return values[0] if values else None


def _message(resp: requests.Response) -> str:
    try:
        return str(resp.json().get("message", resp.text))[:300]
    except ValueError:
        return resp.text[:300]
