"""GitHub's "Re-run" buttons over HTTP: `check_run.rerequested` on the plan check of a fork's PR (no
`pull_requests` in the payload) and `check_suite.rerequested` on a same-repository PR re-plan the PR head."""

from __future__ import annotations

import json

import httpx

from tests.bot import github_spec as gs
from tests.bot.conftest import Lab
from tests.bot.helpers import REPO, bot_comments, experiment_file
from tests.bot.test_e2e_pulls import preregister


def _check(lab: Lab, pr: int) -> dict:
    [check] = lab.driver.thread(REPO, pr)["check_runs"]
    return check


def test_rerun_buttons_replan_the_pr_head(lab: Lab) -> None:
    d = lab.driver
    n = preregister(lab)
    planner = lab.bot.env_for(1)[0].planner
    planner.timeout_s = 0.05  # the first plan times out (a loaded host): the Re-run button gives a second chance
    fork_pr = d.open_pull(REPO, "alice", f"exp-{n}", {f"experiments/exp{n:03d}_wider_mlp.py": experiment_file(n)},
                          "Wider", f"Preregistration: #{n}", fork_owner="alice")
    lab.settle(timeout=60)
    first = _check(lab, fork_pr)
    assert first["conclusion"] == "failure" and "timed out" in (first["output"]["summary"] or "")

    planner.timeout_s = 20.0
    d.rerun_check(REPO, "alice", check_run_id=first["id"])
    lab.settle(timeout=60)
    again = _check(lab, fork_pr)  # the same check run, now green; still one sticky plan comment
    assert again["id"] == first["id"] and again["conclusion"] == "success", again["output"]
    [plan] = bot_comments(d.thread(REPO, fork_pr), "plan")
    assert f"exp{n}/noop@v1" in plan["body"]

    # "Re-run all checks" on a same-repository PR (the suite lists the PR): planned again at its head.
    m = preregister(lab, "[Experiment]: Second")
    own_pr = d.open_pull(REPO, "maintainer", f"exp-{m}", {f"experiments/exp{m:03d}_second.py": experiment_file(m)},
                         "Second", f"Preregistration: #{m}")
    lab.settle(timeout=60)
    head = d.thread(REPO, own_pr)["head_sha"]
    before = len([r for r in d.requests() if r["method"] == "PATCH" and "/check-runs/" in r["path"]])
    guid = d.rerun_check(REPO, "maintainer", head_sha=head)
    lab.settle(timeout=60)
    after = [r for r in d.requests() if r["method"] == "PATCH" and "/check-runs/" in r["path"]]
    assert len(after) == before + 1 and after[-1]["body"]["conclusion"] == "success"
    assert (lab.bot.ledger.delivery_status(guid) or {}).get("status") == "done"

    # A re-run of another app's check (GitHub would not send it to us; the handler checks anyway) does nothing.
    d.configure(tokens={"ghs_other_app": "other-ci[bot]"})
    other = httpx.post(f"{d.sandbox.base_url}/repos/{REPO}/check-runs", json={"name": "ci/tests", "head_sha": head},
                       headers={"Authorization": "Bearer ghs_other_app"}).json()
    writes = len([r for r in d.requests() if r["method"] != "GET"])
    guid = d.rerun_check(REPO, "maintainer", check_run_id=other["id"])
    lab.settle()
    assert len([r for r in d.requests() if r["method"] != "GET"]) == writes  # the bot wrote nothing
    assert (lab.bot.ledger.delivery_status(guid) or {}).get("status") == "done"

    if gs.OPENAPI.exists():  # the re-run payloads are GitHub's
        kinds = set()
        for event, body in d.sent.values():
            payload = json.loads(body)
            if payload.get("action") == "rerequested":
                kinds.add(event)
                schema = gs.webhook_schema(event, "rerequested")
                assert schema is not None
                errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:120]}"
                          for e in gs.validator(schema).iter_errors(payload)]
                assert not errors, (event, errors[:5])
        assert kinds == {"check_run", "check_suite"}
