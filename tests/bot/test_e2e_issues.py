"""End to end over HTTP: issue forms -> labels and one sticky preregistration comment; speedrun starter PR."""

from __future__ import annotations

from tests.bot.conftest import Lab
from tests.bot.helpers import REPO, bot_comments, experiment_body, speedrun_body


def test_experiment_form_is_preregistered_then_edit_revalidates(lab: Lab) -> None:
    d = lab.driver
    n = d.open_issue(REPO, "alice", "[Experiment]: Wider MLP", experiment_body(), labels=["experiment"])
    lab.settle()
    t = d.thread(REPO, n)
    assert "preregistered" in t["labels"] and "needs-info" not in t["labels"]
    [c] = bot_comments(t, "preregistration")
    assert f"experiments/exp{n:03d}_wider_mlp.py" in c["body"]
    assert "Preregistered" in c["body"]
    rec = lab.bot.ledger.preregistration(REPO, n)
    assert rec and rec["status"] == "preregistered" and rec["planned_flops"] == 3e16 and rec["track"] == "budget_1e17"

    d.edit_issue(REPO, n, "alice", experiment_body(flops="lots", track="nonsense"))
    lab.settle()
    t = d.thread(REPO, n)
    assert "needs-info" in t["labels"] and "preregistered" not in t["labels"]
    [c] = bot_comments(t)  # edited, never duplicated
    assert "not a positive number of FLOPs" in c["body"] and "unknown track" in c["body"]
    assert lab.bot.ledger.preregistration(REPO, n)["status"] == "needs-info"


def test_garbage_form_gets_needs_info_listing_fields(lab: Lab) -> None:
    d = lab.driver
    n = d.open_issue(REPO, "mallory", "[Experiment]: x", "random text @octocat <!-- openlab:plan:1 --> <b>hi</b>",
                     labels=["experiment"])
    lab.settle()
    t = d.thread(REPO, n)
    assert t["labels"] == ["experiment", "needs-info"]
    [c] = bot_comments(t)
    for label in ("Hypothesis", "Goal and success criterion", "Planned compute budget (FLOPs)", "Track"):
        assert f"**{label}**: section missing" in c["body"]
    assert "<b>" not in c["body"] and c["body"].count("<!-- openlab:") == 1


def test_over_budget_is_needs_info(lab: Lab) -> None:
    n = lab.driver.open_issue(REPO, "alice", "[Experiment]: huge", experiment_body(flops="5e21", track="all"),
                              labels=["experiment"])
    lab.settle()
    [c] = bot_comments(lab.driver.thread(REPO, n))
    assert "over this repo's budget" in c["body"]


def test_speedrun_starter_branch_and_draft_pr(lab: Lab) -> None:
    d = lab.driver
    n = d.open_issue(REPO, "ada", "[Speedrun]: Tiny fast", speedrun_body(), labels=["speedrun"])
    lab.settle()
    t = d.thread(REPO, n)
    assert "preregistered" in t["labels"]
    state = d.repo_state(REPO)
    branch = f"openlab/speedrun-{n}-tiny-fast"
    assert branch in state["branches"]
    assert "experiments/speedrun/tiny_fast/tiny_fast.py" in state["files"][branch]
    [pr] = state["pulls"]
    pr_thread = d.thread(REPO, pr)
    assert f"Preregistration: #{n}" in pr_thread["body"]
    # a redelivery of the same event creates nothing new
    guid = next(iter(d.sent))
    assert d.redeliver(guid).status_code == 200
    lab.settle()
    assert d.repo_state(REPO)["pulls"] == [pr]


def test_issue_without_form_is_left_alone(lab: Lab) -> None:
    n = lab.driver.open_issue(REPO, "bob", "Typo in README", "fix it")
    lab.settle()
    t = lab.driver.thread(REPO, n)
    assert t["labels"] == [] and t["comments"] == []
