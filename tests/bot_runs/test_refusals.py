"""The dispatcher re-reads the PR and the quotas before it submits: what it refuses, and what the PR shows.

These never reach Ray (the backend points at a closed port, so a wrongly accepted run would show as queued)."""

from __future__ import annotations

from bot.config.quotas import Quotas, quota_problem
from tests.bot_runs.conftest import LAB
from tests.bot_runs.helpers import bot_comments, checks, dispatch, open_fault_pull


def test_head_moved_after_approval_is_refused(lab_factory) -> None:
    lab = lab_factory(None, serve_bot=False)
    pr = open_fault_pull(lab, "moved", "valid")
    with lab.state.lock:
        t = lab.state.threads[(LAB, pr)]
        approved = t.pull["head_sha"]
    # The author pushes between the maintainer's /run and the dispatch (the TOCTOU window).
    pushed = lab.commit("moved", {"notes.txt": "sneaky"})
    with lab.state.lock:
        t.pull["head_sha"] = pushed
    run = dispatch_at(lab, pr, approved)
    assert lab.services.ledger.run(run)["status"] == "refused"
    [comment] = bot_comments(lab, pr, "run")
    assert "refused" in comment and f"moved to `{pushed[:7]}`" in comment
    assert lab.services.states.get(run).submit_tries == 0


def test_closed_pr_is_refused(lab_factory) -> None:
    lab = lab_factory(None, serve_bot=False)
    pr = open_fault_pull(lab, "closed", "valid")
    with lab.state.lock:
        lab.state.threads[(LAB, pr)].state = "closed"
    run = dispatch(lab, pr)
    assert lab.services.ledger.run(run["run_id"])["status"] == "refused"
    assert "the pull request is closed" in bot_comments(lab, pr, "run")[0]
    assert checks(lab, run["run_id"]) == []


def test_per_pr_quota_refuses_the_fourth_active_run(lab_factory) -> None:
    lab = lab_factory(None, serve_bot=False)
    pr = open_fault_pull(lab, "quota", "valid")
    active = [dispatch(lab, pr, attempt=i) for i in (1, 2, 3)]
    assert [lab.services.ledger.run(r["run_id"])["status"] for r in active] == ["queued"] * 3
    fourth = dispatch(lab, pr, attempt=4)
    assert lab.services.ledger.run(fourth["run_id"])["status"] == "refused"
    body = next(b for b in bot_comments(lab, pr, "run") if fourth["run_id"] in b)
    assert "max_active_runs_per_pr" in body


def test_monthly_flops_quota() -> None:
    runs = [{"run_id": "a", "pr": 1, "requested_by": "u", "status": "succeeded", "created_at": 2e9}]
    q = Quotas(max_flops_per_month=1e18)
    assert quota_problem(q, run_id="b", pr=2, user="v", planned_flops=5e17, runs=runs, flops_of={"a": 4e17}) is None
    why = quota_problem(q, run_id="b", pr=2, user="v", planned_flops=7e17, runs=runs, flops_of={"a": 4e17})
    assert why is not None and "max_flops_per_month" in why


def dispatch_at(lab, pr: int, sha: str) -> str:
    from bot.actions import DispatchRun, run_id

    experiment = "experiments/speedrun/moved/moved.py"
    rid = run_id(LAB, pr, sha, experiment, 1)
    _, executor = lab.bot.env_for(1)
    executor.apply(DispatchRun(repo=LAB, run_id=rid, pr=pr, sha=sha, experiment=experiment, attempt=1,
                               requested_by="maintainer", installation_id=1))
    return rid


def test_uninstalling_the_app_cancels_its_runs(lab_factory) -> None:
    import json

    lab = lab_factory(None, serve_bot=False)
    pr = open_fault_pull(lab, "uninstalled", "valid")
    run = dispatch(lab, pr)  # queued: Ray is down
    payload = {"action": "deleted", "installation": {"id": 1, "account": {"login": "lab"}},
               "sender": lab.state.user("lab-admin")}
    assert lab.bot.ledger.claim("uninstall-1", "installation", "deleted", json.dumps(payload).encode())
    lab.bot.worker.drain()
    assert lab.services.ledger.run(run["run_id"])["status"] == "cancelled"
    report = lab.services.states.get(run["run_id"])
    assert report.outcome == "cancelled" and "uninstalled" in (report.reason or "")


def _record(lab, pr: int, **plan) -> str:  # type: ignore[no-untyped-def]
    from bot.actions import RecordPlan

    with lab.state.lock:
        t = lab.state.threads[(LAB, pr)]
        sha = t.pull["head_sha"]
        files = lab.state.repos[LAB].commits[sha]
    experiment = next(p for p in files if p.startswith("experiments/speedrun/") and p.endswith(".py"))
    _, executor = lab.bot.env_for(1)
    executor.apply(RecordPlan(repo=LAB, pr=pr, sha=sha, experiment=experiment, **plan))
    return experiment


def test_plan_over_the_preregistered_budget_is_refused(lab_factory) -> None:
    lab = lab_factory(None, serve_bot=False)
    lab.services.ledger.upsert_preregistration(LAB, 1, form="speedrun", status="preregistered", title="t", slug="t",
                                               fields={}, track=None, planned_flops=1e15)
    pr = open_fault_pull(lab, "overbudget", "valid")
    _record(lab, pr, model_flops=5e15, tokens=1000)  # what `openlab plan` said at this SHA
    run = dispatch(lab, pr)
    assert lab.services.ledger.run(run["run_id"])["status"] == "refused"
    body = bot_comments(lab, pr, "run")[0]
    assert "over the 1e+15 preregistered in issue 1" in body


def test_failed_plan_at_the_sha_is_refused(lab_factory) -> None:
    lab = lab_factory(None, serve_bot=False)
    pr = open_fault_pull(lab, "badplan", "valid")
    _record(lab, pr, error="SyntaxError at line 3")
    run = dispatch(lab, pr)
    assert lab.services.ledger.run(run["run_id"])["status"] == "refused"
    assert "SyntaxError at line 3" in bot_comments(lab, pr, "run")[0]
