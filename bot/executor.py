"""Apply actions: the only code that writes to GitHub or the ledger on a handler's behalf.

Comments and check runs are upserted: found by the id the ledger remembers, else by their hidden marker *and*
the bot's own login among the thread's comments (a marker pasted by someone else is not ours), else created.
`DispatchRun` records the run as queued and hands it to the pluggable :class:`Dispatcher` (issue 5 plugs the Ray
dispatcher in; the default only records). Dispatchers must be idempotent by `run_id`: after a crash the same
`DispatchRun` may be applied again.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from bot import actions as A
from bot import sticky
from bot.github.client import GitHubClient
from bot.github.escape import truncate_body
from bot.github.render import marker
from bot.ledger import Ledger
from bot.ledger_tables import ACTIVE_RUN_STATES, check_runs, comments

log = logging.getLogger("openlab.bot")


class Dispatcher(Protocol):
    def submit(self, run: dict[str, Any]) -> None: ...

    def cancel(self, run: dict[str, Any], reason: str) -> None: ...


class RecordOnlyDispatcher:
    """Leaves runs `queued` in the ledger for a separate dispatcher process to pick up."""

    def submit(self, run: dict[str, Any]) -> None:
        log.info("run %s queued for %s@%s", run["run_id"], run["experiment"], run["sha"][:7])

    def cancel(self, run: dict[str, Any], reason: str) -> None:
        log.info("run %s cancelled: %s", run["run_id"], reason)


class Executor:
    def __init__(self, gh: GitHubClient, ledger: Ledger, bot_login: str, dispatcher: Dispatcher | None = None) -> None:
        self.gh = gh
        self.ledger = ledger
        self.bot_login = bot_login
        self.dispatcher: Dispatcher = dispatcher or RecordOnlyDispatcher()

    def apply(self, action: A.Action) -> None:
        getattr(self, f"_{action.type}")(action)

    # -- GitHub ------------------------------------------------------------------------------------------------
    def _upsert_comment(self, a: A.UpsertComment) -> None:
        if a.kind in sticky.SECTION_KINDS:
            # A part of the PR's one sticky comment: stored, then the whole comment is recomposed.
            sticky.save_section(self.ledger, a.repo, a.issue_number, a.kind, a.key, a.body)
            self._write_sticky(a.repo, a.issue_number)
            return
        self._write_comment(a.repo, a.issue_number, a.kind, a.key, a.body)

    def _write_sticky(self, repo: str, number: int, head_sha: str | None = None,
                      approval_label: str = "approved-to-run") -> None:
        body = sticky.compose(self.ledger, repo, number, head_sha=head_sha, approval_label=approval_label)
        self._write_comment(repo, number, sticky.STICKY_KIND, str(number), body)

    def _write_comment(self, repo: str, number: int, kind: str, key_: str, text: str) -> None:
        key = f"{kind}:{key_}"
        mark = marker(kind, key_)
        body = text if text.startswith(mark) else f"{mark}\n{text}"
        body = truncate_body(body)
        where = {"repo": repo, "issue_number": number, "key": key}
        cid = self.ledger.object_id(comments, **where)
        if cid is not None and self.gh.update_comment(repo, cid, body) is not None:
            return
        for c in self.gh.issue_comments(repo, number):
            if (c.get("body") or "").startswith(mark) and c["user"]["login"].lower() == self.bot_login.lower():
                self.gh.update_comment(repo, c["id"], body)
                self.ledger.remember_object(comments, c["id"], **where)
                return
        created = self.gh.create_comment(repo, number, body)
        self.ledger.remember_object(comments, created["id"], **where)

    def _add_labels(self, a: A.AddLabels) -> None:
        self.gh.add_labels(a.repo, a.issue_number, a.labels)

    def _remove_label(self, a: A.RemoveLabel) -> None:
        self.gh.remove_label(a.repo, a.issue_number, a.label)

    def _react(self, a: A.React) -> None:
        self.gh.react(a.repo, a.comment_id, a.content)

    def _upsert_check_run(self, a: A.UpsertCheckRun) -> None:
        output: dict[str, Any] = {"title": a.title[:255], "summary": truncate_body(a.summary)}
        if a.text:
            output["text"] = truncate_body(a.text)
        body: dict[str, Any] = {"status": a.status, "output": output}
        if a.conclusion:
            body["conclusion"] = a.conclusion
        if a.external_id:
            body["external_id"] = a.external_id
        where = {"repo": a.repo, "head_sha": a.head_sha, "name": a.name}
        cid = self.ledger.object_id(check_runs, **where)
        if cid is None:
            found = self.gh.check_runs_for_ref(a.repo, a.head_sha, a.name)
            cid = found[0]["id"] if found else None
        if cid is not None and self.gh.update_check_run(a.repo, cid, body) is not None:
            self.ledger.remember_object(check_runs, cid, **where)
            return
        created = self.gh.create_check_run(a.repo, {"name": a.name, "head_sha": a.head_sha, **body})
        self.ledger.remember_object(check_runs, created["id"], **where)

    def _create_starter(self, a: A.CreateStarter) -> None:
        owner = a.repo.split("/")[0]
        if self.gh.get_branch_sha(a.repo, a.branch) is None:
            base_sha = self.gh.get_branch_sha(a.repo, a.base)
            if base_sha is None:
                raise ActionError(f"base branch {a.base} not found")
            self.gh.create_branch(a.repo, a.branch, base_sha)
        if self.gh.get_contents(a.repo, a.path, ref=a.branch) is None:
            self.gh.put_file(a.repo, a.path, a.content, a.branch, f"Starter for #{a.issue_number}")
        if self.gh.find_pull(a.repo, owner, a.branch) is None:
            self.gh.create_pull(a.repo, title=a.title, head=a.branch, base=a.base, body=a.body, draft=True)

    # -- ledger ------------------------------------------------------------------------------------------------
    def _record_preregistration(self, a: A.RecordPreregistration) -> None:
        self.ledger.upsert_preregistration(a.repo, a.issue_number, form=a.form, status=a.status, title=a.title,
                                           slug=a.slug, fields=a.fields, track=a.track, planned_flops=a.planned_flops)

    def _record_plan(self, a: A.RecordPlan) -> None:
        self.ledger.record_plan(a.repo, a.sha, a.experiment, pr=a.pr, model_flops=a.model_flops, tokens=a.tokens,
                                error=a.error)

    def _record_approval(self, a: A.RecordApproval) -> None:
        self.ledger.record_approval(a.repo, a.pr, a.sha, a.approved_by, a.via)

    def _record_observed_head(self, a: A.RecordObservedHead) -> None:
        self.ledger.record_observed_head(a.repo, a.pr, a.sha, a.comment_id)

    def _revoke_approvals(self, a: A.RevokeApprovals) -> None:
        self.ledger.revoke_approvals(a.repo, a.pr, a.keep_sha, a.reason)

    def _dispatch_run(self, a: A.DispatchRun) -> None:
        if a.seeds:
            from bot.runs.reproductions import register

            register(self.ledger.engine, a.run_id, a.seeds)
        self.ledger.add_run(run_id=a.run_id, repo=a.repo, pr=a.pr, sha=a.sha, experiment=a.experiment,
                            attempt=a.attempt, requested_by=a.requested_by, installation_id=a.installation_id)
        run = self.ledger.run(a.run_id)
        if run and run["status"] == "queued":
            self.dispatcher.submit({**run, "comment_id": a.comment_id})

    def _cancel_run(self, a: A.CancelRun) -> None:
        run = self.ledger.run(a.run_id)
        if run and run["status"] in ACTIVE_RUN_STATES:
            self.ledger.set_run_status(a.run_id, "cancelled", a.reason)
            self.dispatcher.cancel(run, a.reason)

    def _sync_runs_comment(self, a: A.SyncRunsComment) -> None:
        sticky.save_notice(self.ledger, a.repo, a.pr, a.notice)
        self._write_sticky(a.repo, a.pr, head_sha=a.head_sha, approval_label=a.approval_label)


class ActionError(Exception):
    """An action that cannot be applied as asked (not retried)."""
