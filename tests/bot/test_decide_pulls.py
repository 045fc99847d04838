"""`bot.handlers.pulls.decide` as a table: (event, facts, ledger state) -> the actions it returns. The handler is
pure (DESIGN principle 2), so each case needs no GitHub, no server and no worker: a real ledger in SQLite holds
the approvals and runs it reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.actions import CancelRun, DispatchRun, RecordApproval, RemoveLabel, RevokeApprovals, SyncRunsComment
from bot.commands.context import PullInfo
from bot.config.repo_config import RepoConfig
from bot.forms.linking import ExperimentFile
from bot.github.events import PullRequestEvent
from bot.handlers.pulls import PullFacts, decide
from bot.ledger import Ledger, LedgerView

REPO, PR, OLD, NEW = "lab/openlab", 7, "a" * 40, "b" * 40
EXP = "experiments/exp001_wider.py"


def event(action: str, sender: str = "alice", label: str | None = None, labels: tuple[str, ...] = ()) -> PullRequestEvent:
    repo = {"name": "openlab", "full_name": REPO, "owner": {"login": "lab"}}
    ref = {"ref": "feature", "sha": NEW, "repo": repo}
    payload: dict[str, Any] = {
        "action": action, "number": PR, "repository": repo, "installation": {"id": 1},
        "sender": {"login": sender, "type": "Bot" if sender.endswith("[bot]") else "User"},
        "pull_request": {"number": PR, "title": "Wider", "user": {"login": "alice"}, "head": ref,
                         "base": {**ref, "ref": "main", "sha": "c" * 40},
                         "labels": [{"name": n} for n in labels]},
    }
    if label:
        payload["label"] = {"name": label}
    return PullRequestEvent.model_validate(payload)


def facts(trusted: bool = False, state: str = "open", draft: bool = False) -> PullFacts:
    pull = PullInfo(number=PR, head_sha=NEW, author="alice", state=state, draft=draft, from_fork=False,
                    experiments=(ExperimentFile(EXP, 1),))
    return PullFacts(RepoConfig(), None, pull, {1: "preregistered"}, {1: 1e15}, None, trusted,
                     "maintainer has `write` access" if trusted else "alice has `read` access")


@pytest.fixture
def view(tmp_path: Path) -> LedgerView:
    ledger = Ledger(f"sqlite:///{tmp_path}/ledger.sqlite3")
    ledger.record_approval(REPO, PR, OLD, "maintainer", "command")
    for rid, status in (("r-queued", "queued"), ("r-running", "running"), ("r-done", "succeeded")):
        ledger.add_run(run_id=rid, repo=REPO, pr=PR, sha=OLD, experiment=EXP, attempt=1, requested_by="maintainer",
                       installation_id=1)
        ledger.set_run_status(rid, status)
    return LedgerView(ledger)


def kinds(actions: list) -> list[str]:
    return [type(a).__name__ for a in actions]


CASES = [
    # (name, event, facts, expected action kinds, cancelled run ids)
    ("a person's push revokes, drops the label, stops old active runs",
     event("synchronize", labels=("approved-to-run",)), facts(),
     ["RevokeApprovals", "RemoveLabel", "CancelRun", "CancelRun", "SyncRunsComment"], {"r-queued", "r-running"}),
    ("the bot's results commit stops only queued runs",
     event("synchronize", sender="openlab[bot]"), facts(),
     ["RevokeApprovals", "CancelRun", "SyncRunsComment"], {"r-queued"}),
    ("closing cancels active runs and revokes", event("closed"), facts(state="closed"),
     ["CancelRun", "CancelRun", "RevokeApprovals"], {"r-queued", "r-running"}),
    ("an untrusted label is taken off", event("labeled", sender="mallory", label="approved-to-run"), facts(),
     ["RemoveLabel", "SyncRunsComment"], set()),
    ("removing the label revokes", event("unlabeled", sender="maintainer", label="approved-to-run"),
     facts(trusted=True), ["RevokeApprovals", "SyncRunsComment"], set()),
    ("a trusted label approves the head and dispatches", event("labeled", sender="maintainer", label="approved-to-run"),
     facts(trusted=True), ["RecordApproval", "DispatchRun", "SyncRunsComment"], set()),
    ("another label does nothing", event("labeled", sender="maintainer", label="bug"), facts(trusted=True), [], set()),
    ("the bot's own label change is not an approval", event("labeled", sender="openlab[bot]", label="approved-to-run"),
     facts(), [], set()),
]


@pytest.mark.parametrize(("name", "ev", "fx", "expected", "cancelled"), CASES, ids=[c[0] for c in CASES])
def test_decide(view: LedgerView, name: str, ev: PullRequestEvent, fx: PullFacts, expected: list[str],
                cancelled: set[str]) -> None:
    actions = decide(ev, fx, view)
    assert kinds(actions) == expected
    assert {a.run_id for a in actions if isinstance(a, CancelRun)} == cancelled
    for a in actions:
        if isinstance(a, RevokeApprovals) and ev.action == "synchronize":
            assert a.keep_sha == NEW  # the new head's approval, if any, stays
        if isinstance(a, RecordApproval | DispatchRun):
            assert a.sha == NEW and a.pr == PR
        if isinstance(a, RemoveLabel):
            assert a.label == "approved-to-run"
        if isinstance(a, SyncRunsComment):
            assert a.head_sha == NEW


def test_decide_reads_nothing_but_its_arguments(view: LedgerView) -> None:
    """Same inputs, same actions: deciding twice writes nothing the second call could see."""
    ev, fx = event("synchronize", labels=("approved-to-run",)), facts()
    assert decide(ev, fx, view) == decide(ev, fx, view)
