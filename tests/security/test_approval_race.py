"""The approval race: a maintainer comments `/run` on the head they reviewed, the PR author pushes before the
worker gets to the comment (a delayed worker: here it simply does not run until after the push), and the bot must
never approve or dispatch the commit pushed after the comment. Real bot over HTTP, the sandbox GitHub, real plans."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.ingress.app import create_app
from bot.ingress.service import Bot
from bot.sandbox.driver import SandboxDriver
from tests.bot import conftest as bot_fixtures
from tests.bot.helpers import (
    REPO,
    SECRET,
    ServerThread,
    bot_comments,
    experiment_body,
    experiment_file,
    repo_files,
)


@dataclass
class SlowLab:
    driver: SandboxDriver
    bot: Bot

    def work(self) -> None:
        """The delayed worker finally runs: everything in the inbox, in arrival order."""
        self.bot.worker.drain()


sandbox, app_key = bot_fixtures.sandbox, bot_fixtures.app_key  # the bot tests' fixtures, shared


@pytest.fixture
def slow_lab(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[SlowLab]:
    url, _ = request.getfixturevalue("sandbox")
    app_key: tuple[Path, str] = request.getfixturevalue("app_key")
    bot = Bot(bot_fixtures.make_settings(tmp_path, url, app_key))
    with ServerThread(create_app(bot, start_worker=False)) as srv:
        driver = SandboxDriver(url, srv.url, SECRET)
        driver.setup_repo(REPO, repo_files(), roles={"maintainer": "write"}, app_public_key=app_key[1], app_id=1)
        yield SlowLab(driver, bot)


def _reply(lab: SlowLab, pr: int, cid: int) -> str:
    [reply] = [c for c in bot_comments(lab.driver.thread(REPO, pr), "reply") if f":{cid} -->" in c["body"]]
    return reply["body"]


def test_push_between_comment_and_processing_is_never_dispatched(slow_lab: SlowLab) -> None:
    lab, d = slow_lab, slow_lab.driver
    n = d.open_issue(REPO, "alice", "[Experiment]: race", experiment_body(), labels=["experiment"])
    path = f"experiments/exp{n:03d}_race.py"
    pr = d.open_pull(REPO, "alice", "race", {path: experiment_file(n)}, "Race", f"Preregistration: #{n}",
                     fork_owner="alice")
    lab.work()
    reviewed = d.thread(REPO, pr)["head_sha"]

    # 1. The comment is queued, then the author pushes (webhook delivered), then the worker runs.
    cid, _ = d.comment(REPO, pr, "maintainer", "/run")
    pushed = d.push(REPO, pr, "alice", {path: experiment_file(n) + "import os  # unreviewed\n"})
    lab.work()
    assert lab.bot.ledger.runs(REPO, pr) == [] and lab.bot.ledger.approvals(REPO, pr) == []
    body = _reply(lab, pr, cid)
    assert f"moved from `{reviewed[:7]}`" in body and f"`{pushed[:7]}` after your comment" in body

    # 2. Same, but the push's webhook has not reached the bot yet: the API head alone shows the move.
    cid, _ = d.comment(REPO, pr, "maintainer", "/run")
    silent = d._ctl("push", repo=REPO, number=pr, user="alice", files={path: experiment_file(n) + "#2\n"})["after"]
    lab.work()
    assert lab.bot.ledger.runs(REPO, pr) == [] and lab.bot.ledger.approvals(REPO, pr) == []
    assert f"`{silent[:7]}` after your comment" in _reply(lab, pr, cid)

    # 3. The refusal named the head it saw; a `/run` after that reply approves exactly that head, by name.
    cid, _ = d.comment(REPO, pr, "maintainer", "/run")
    lab.work()
    [run] = lab.bot.ledger.runs(REPO, pr)
    [approval] = lab.bot.ledger.approvals(REPO, pr)
    assert run["sha"] == approval["sha"] == silent
    # A successful `/run` gets a reaction, not a reply (issue 15); the PR's one comment names the SHA approved.
    assert not [c for c in bot_comments(d.thread(REPO, pr), "reply") if f":{cid} -->" in c["body"]]
    [runs] = bot_comments(d.thread(REPO, pr), "runs")
    assert f"Approved for `{silent[:7]}` by maintainer" in runs["body"]


def test_unknown_head_binds_only_to_a_head_planned_before_the_comment() -> None:
    from bot.runs.approval import HeadTimeline, bind_head

    seen = HeadTimeline(found=True, before=None, after=(), received_at=100.0)
    assert bind_head(seen, "a" * 40, planned_at=99.0).sha == "a" * 40  # planned (shown on the PR) before
    late = bind_head(seen, "a" * 40, planned_at=101.0)  # first planned after the comment: cannot tell
    assert late.sha is None and late.observed == "a" * 40 and "`aaaaaaa`" in (late.problem or "")
    moved = HeadTimeline(found=True, before=None, after=("b" * 40,), received_at=100.0)
    assert bind_head(moved, "a" * 40, planned_at=99.0).sha is None  # a push arrived after the comment
