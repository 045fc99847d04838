"""Draft PRs over HTTP: opened as a draft -> a short note and no plan; a push to the draft -> nothing more;
`/run` on the draft -> a clear reply; ready for review -> the plan replaces the note."""

from __future__ import annotations

import json

from tests.bot import github_spec as gs
from tests.bot.conftest import Lab
from tests.bot.helpers import REPO, bot_comments, experiment_file
from tests.bot.test_e2e_pulls import preregister


def test_draft_is_planned_only_once_ready_for_review(lab: Lab) -> None:
    d = lab.driver
    n = preregister(lab)
    path = f"experiments/exp{n:03d}_wider_mlp.py"
    pr = d.open_pull(REPO, "maintainer", f"exp-{n}", {path: experiment_file(n)}, "Wider", f"Preregistration: #{n}",
                     draft=True)
    lab.settle()
    t = d.thread(REPO, pr)
    [note] = bot_comments(t, "plan")
    assert "draft" in note["body"] and "ready for review" in note["body"]
    assert not t["check_runs"]

    d.push(REPO, pr, "maintainer", {path: experiment_file(n) + "# tweak\n"})
    cid, _ = d.comment(REPO, pr, "maintainer", "/run")
    lab.settle()
    t = d.thread(REPO, pr)
    assert not t["check_runs"] and [c["body"] for c in bot_comments(t, "plan")] == [note["body"]]
    [reply] = bot_comments(t, "reply")
    assert "draft" in reply["body"] and "ready for review" in reply["body"]
    assert not lab.bot.ledger.runs(REPO, pr) and not lab.bot.ledger.approvals(REPO, pr)
    plan_calls = [r for r in d.requests() if r["method"] == "GET" and r["path"].endswith(path)]
    assert not plan_calls, "a draft's experiment file is not even fetched for planning"

    d.ready_for_review(REPO, pr, "maintainer")
    lab.settle(timeout=60)
    t = d.thread(REPO, pr)
    [check] = t["check_runs"]
    assert check["name"] == "openlab/plan" and check["conclusion"] == "success", check["output"]
    [plan] = bot_comments(t, "plan")  # the note became the plan: one sticky comment
    assert f"exp{n}/noop@v1" in plan["body"] and "draft" not in plan["body"]

    if gs.OPENAPI.exists():  # the ready_for_review payload is GitHub's
        for event, body in d.sent.values():
            payload = json.loads(body)
            if payload.get("action") == "ready_for_review":
                schema = gs.webhook_schema(event, "ready_for_review")
                assert schema is not None and not list(gs.validator(schema).iter_errors(payload))
