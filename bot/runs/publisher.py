"""GitHub writes of the run lifecycle besides comments: one check run per run, reactions, the results commit.
(Comments, the sticky one included, have one upsert path: :class:`bot.executor.Executor`.)

Every write here finds its object first, so repeating one after a crash or a 5xx never makes a second copy:
- a check run is found by the id remembered in the ledger, else among the SHA's check runs by ``external_id`` =
  run id (several runs of one SHA each get their own ``openlab/run`` check, the way re-runs of Actions do);
- the results commit (results.json, metrics, chart) is one commit through the Git database API, made only when
  the branch does not already hold these bytes.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any
from urllib.parse import quote

from bot.github.client import GitHubClient, GitHubError
from bot.github.escape import truncate_body
from bot.ledger import Ledger
from bot.ledger_tables import check_runs

CHECK_NAME = "openlab/run"
MAX_CHECK_TEXT = 60_000


def _iso(ts: datetime | None) -> str | None:
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ") if ts else None


class Publisher:
    def __init__(self, gh: GitHubClient, ledger: Ledger, bot_login: str) -> None:
        self.gh = gh
        self.ledger = ledger
        self.bot_login = bot_login

    # -- reactions (comments go through the bot core: bot.executor, one upsert path) ---------------------------
    def react(self, repo: str, comment_id: int, content: str) -> None:
        # GitHub answers 200 (not a second reaction) when the same user repeats the same reaction.
        self.gh.react(repo, comment_id, content)

    # -- check runs --------------------------------------------------------------------------------------------
    def check_run(
        self, repo: str, run_id: str, sha: str, *, status: str, title: str, summary: str,
        conclusion: str | None = None, text: str | None = None, details_url: str | None = None,
        started_at: datetime | None = None, completed_at: datetime | None = None,
    ) -> int:
        output: dict[str, Any] = {"title": title[:200], "summary": truncate_body(summary, MAX_CHECK_TEXT)}
        if text:
            output["text"] = truncate_body(text, MAX_CHECK_TEXT)
        body: dict[str, Any] = {"status": status, "output": output, "external_id": run_id}
        if details_url and details_url.startswith(("http://", "https://")):
            body["details_url"] = details_url
        if started_at:
            body["started_at"] = _iso(started_at)
        if status == "completed":
            body["conclusion"] = conclusion
            if completed_at:
                body["completed_at"] = _iso(completed_at)
        key = _check_key(run_id)
        cid = self.ledger.object_id(check_runs, repo=repo, head_sha=sha, name=key)
        if cid is None:
            found = [c for c in self.gh.check_runs_for_ref(repo, sha, CHECK_NAME) if c.get("external_id") == run_id]
            cid = int(found[0]["id"]) if found else None
        if cid is not None and self.gh.update_check_run(repo, cid, body) is not None:
            self.ledger.remember_object(check_runs, cid, repo=repo, head_sha=sha, name=key)
            return cid
        created = self.gh.create_check_run(repo, {"name": CHECK_NAME, "head_sha": sha, **body})
        self.ledger.remember_object(check_runs, int(created["id"]), repo=repo, head_sha=sha, name=key)
        return int(created["id"])

    # -- the results commit on the PR branch ---------------------------------------------------------------------
    def commit_files(self, repo: str, branch: str, files: dict[str, str], message: str) -> str | None:
        """One commit on ``branch`` that creates or updates every file (Git database API: tree, commit, ref), so
        the run's results, metrics and chart land in one push: one ``synchronize`` event, one re-plan. Returns the
        new commit's sha; None when the branch already holds exactly these contents. The ref moves only fast-forward; if the branch moved
        under us it is tried once more from its new head, then :class:`PushRefused`."""
        changed = {p: c for p, c in files.items() if self.gh.get_contents(repo, p, ref=branch) != c}
        if not changed:
            return None
        entries = [{"path": p, "mode": "100644", "type": "blob", "content": c} for p, c in sorted(changed.items())]
        ref = f"/repos/{repo}/git/refs/heads/{quote(branch)}"
        for attempt in (1, 2):
            try:
                head = self.gh.request("GET", f"/repos/{repo}/git/ref/heads/{quote(branch)}")["object"]["sha"]
                base = self.gh.request("GET", f"/repos/{repo}/git/commits/{head}")["tree"]["sha"]
                tree = self.gh.request("POST", f"/repos/{repo}/git/trees", json={"base_tree": base, "tree": entries})
                commit = self.gh.request("POST", f"/repos/{repo}/git/commits",
                                         json={"message": message, "tree": tree["sha"], "parents": [head]})
                self.gh.request("PATCH", ref, json={"sha": commit["sha"], "force": False})
                return str(commit["sha"])
            except GitHubError as err:
                if err.status == 422 and attempt == 1:
                    continue  # not a fast forward: someone pushed meanwhile; once more on top of their commit
                if err.status in (403, 404, 409, 422):
                    raise PushRefused(str(err)) from None
                raise
        return None  # not reached: the second attempt returns or raises


def _check_key(run_id: str) -> str:
    """The ledger key of a run's check (the name column is short; run ids may be long and readable)."""
    return f"{CHECK_NAME}#{hashlib.sha256(run_id.encode()).hexdigest()[:24]}"


class PushRefused(Exception):
    """The branch refused our commit (the fork does not allow maintainer edits, or it moved): attach instead."""
