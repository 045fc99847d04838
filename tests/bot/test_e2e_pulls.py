"""End to end over HTTP: PR -> plan check run + sticky comment (real `openlab plan` in the sandbox);
/run by trusted and untrusted users; the approval label; a push after approval revokes it."""

from __future__ import annotations

from tests.bot.conftest import Lab
from tests.bot.helpers import REPO, bot_comments, experiment_body, experiment_file


def preregister(lab: Lab, title: str = "[Experiment]: Wider MLP") -> int:
    n = lab.driver.open_issue(REPO, "alice", title, experiment_body(), labels=["experiment"])
    lab.settle()
    return n


def open_pr(lab: Lab, n: int, user: str = "alice", extra: dict[str, str] | None = None) -> int:
    files = {f"experiments/exp{n:03d}_wider_mlp.py": experiment_file(n), **(extra or {})}
    pr = lab.driver.open_pull(REPO, user, f"exp-{n}", files, "Wider MLP", f"Preregistration: #{n}",
                              fork_owner=user if user == "alice" else None)
    lab.settle(timeout=60)
    return pr


def test_pr_gets_plan_check_and_one_comment(lab: Lab) -> None:
    n = preregister(lab)
    pr = open_pr(lab, n)
    t = lab.driver.thread(REPO, pr)
    [check] = t["check_runs"]
    assert check["name"] == "openlab/plan" and check["head_sha"] == t["head_sha"]
    assert check["status"] == "completed" and check["conclusion"] == "success", check["output"]
    [c] = bot_comments(t, "plan")
    assert f"exp{n}/noop@v1" in c["body"] and t["head_sha"][:7] in c["body"]


def test_pr_with_bad_files_fails_check_with_reasons(lab: Lab) -> None:
    n = preregister(lab)
    unregistered = "experiments/exp099_nothing.py"
    files = {
        unregistered: experiment_file(99),
        "experiments/WrongName.py": "x = 1\n",
        f"experiments/exp{n:03d}_loops.py": "while True:\n    pass\n",
    }
    lab.bot.settings.plan_timeout_s = 3.0
    lab.bot.env_for(1)[0].planner.timeout_s = 3.0
    pr = lab.driver.open_pull(REPO, "maintainer", "bad", files, "Bad", "")
    lab.settle(timeout=60)
    t = lab.driver.thread(REPO, pr)
    [check] = t["check_runs"]
    assert check["conclusion"] == "failure"
    body = bot_comments(t, "plan")[0]["body"]
    assert "experiments/WrongName.py" in body and "name it" in body
    assert "issue #99 is missing, not preregistered" in body
    assert "timed out after 3s" in body


def test_run_by_untrusted_then_trusted(lab: Lab) -> None:
    d = lab.driver
    n = preregister(lab)
    pr = open_pr(lab, n)
    cid, _ = d.comment(REPO, pr, "alice", "/run")
    lab.settle()
    t = d.thread(REPO, pr)
    assert {"comment_id": cid, "content": "eyes", "user": "openlab[bot]"} in t["reactions"]
    [reply] = bot_comments(t, "reply")
    assert "alice has `read` access" in reply["body"]
    assert lab.bot.ledger.runs(REPO, pr) == [] and lab.bot.ledger.approvals(REPO, pr) == []

    cid2, _ = d.comment(REPO, pr, "maintainer", "LGTM\n\n/run\n/status")
    lab.settle()
    t = d.thread(REPO, pr)
    [run] = lab.bot.ledger.runs(REPO, pr)
    assert run["status"] == "queued" and run["sha"] == t["head_sha"] and run["requested_by"] == "maintainer"
    [appr] = lab.bot.ledger.approvals(REPO, pr)
    assert appr["sha"] == t["head_sha"] and appr["via"] == "command"
    assert {"comment_id": cid2, "content": "+1", "user": "openlab[bot]"} in t["reactions"]
    [runs_comment] = bot_comments(t, "runs")
    assert run["run_id"] in runs_comment["body"] and "Approved for" in runs_comment["body"]


def test_label_by_triage_is_removed_push_after_approval_revokes(lab: Lab) -> None:
    d = lab.driver
    n = preregister(lab)
    pr = open_pr(lab, n)
    d.add_label(REPO, pr, "triager", "approved-to-run")
    lab.settle()
    t = d.thread(REPO, pr)
    assert "approved-to-run" not in t["labels"]
    assert "triager has `triage` access" in bot_comments(t, "runs")[0]["body"]
    assert lab.bot.ledger.runs(REPO, pr) == []

    d.add_label(REPO, pr, "maintainer", "approved-to-run")
    lab.settle()
    [run] = lab.bot.ledger.runs(REPO, pr)
    approved_sha = run["sha"]
    assert lab.bot.ledger.approvals(REPO, pr)[0]["via"] == "label"

    new_sha = d.push(REPO, pr, "alice", {f"experiments/exp{n:03d}_wider_mlp.py": experiment_file(n) + "#\n"})
    lab.settle(timeout=60)
    t = d.thread(REPO, pr)
    assert "approved-to-run" not in t["labels"]
    assert lab.bot.ledger.approvals(REPO, pr) == []
    assert lab.bot.ledger.run(run["run_id"])["status"] == "cancelled"
    body = bot_comments(t, "runs")[0]["body"]
    assert f"New push `{new_sha[:7]}`" in body and approved_sha[:7] in body and "revoked" in body
    [check] = t["check_runs"]  # the plan was redone for the new head
    assert check["head_sha"] == new_sha

    # /run now approves the new SHA only
    d.comment(REPO, pr, "admin1", "/run")
    lab.settle()
    [appr] = lab.bot.ledger.approvals(REPO, pr)
    assert appr["sha"] == new_sha


def test_commands_in_code_quotes_edits_and_bots_are_ignored(lab: Lab) -> None:
    d = lab.driver
    n = preregister(lab)
    pr = open_pr(lab, n)
    d.comment(REPO, pr, "maintainer", "```\n/run\n```\n> /run\n\n    /run\ntext /run")
    d.comment(REPO, pr, "openlab[bot]", "/run")
    payload_env = d._ctl("comments", repo=REPO, number=pr, user="maintainer", body="/run")
    d._send("issue_comment", "edited", payload_env)
    lab.settle()
    t = d.thread(REPO, pr)
    assert t["reactions"] == [] and bot_comments(t, "reply") == []
    assert lab.bot.ledger.runs(REPO, pr) == []


def test_many_commands_bounded_and_help(lab: Lab) -> None:
    d = lab.driver
    n = preregister(lab)
    pr = open_pr(lab, n)
    body = "\n".join(["/help", "/status"] + [f"/run exp{i}" for i in range(300)])
    d.comment(REPO, pr, "maintainer", body)
    lab.settle()
    [reply] = bot_comments(d.thread(REPO, pr), "reply")
    assert "/rerun [experiment]" in reply["body"]  # help generated from the registry
    assert "more command(s) skipped" in reply["body"]
    assert len(reply["body"]) < 65536
