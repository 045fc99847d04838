"""Faults on the way from an approved run to its report, each ending with the PR showing the truth.

Real Ray head, real sandbox over HTTP, the bot core's executor applying DispatchRun into our dispatcher."""

from __future__ import annotations

import pytest

from bot.runs.jobs import JobSpec, RayJobs
from tests.bot_runs.conftest import LAB
from tests.bot_runs.experiments import hostile_results_json
from tests.bot_runs.helpers import bot_comments, checks, dispatch, explain, open_fault_pull

pytestmark = pytest.mark.slow


def JobSubmissionClient(url: str):  # noqa: N802 - imported late: Ray reads its auth token when first used
    from ray.job_submission import JobSubmissionClient as Client

    return Client(url)


def test_ray_down_keeps_the_run_queued_then_it_runs(lab_factory, ray_head: str) -> None:
    lab = lab_factory(None, serve_bot=False)  # backend points at a closed port: Ray is down
    pr = open_fault_pull(lab, "ray-down", "valid")
    run = dispatch(lab, pr)
    report = lab.services.states.get(run["run_id"])
    assert lab.services.ledger.run(run["run_id"])["status"] == "queued"
    assert report is not None and report.phase == "queued" and report.submit_tries == 1
    assert report.next_try_at > lab.services.clock()
    [comment] = bot_comments(lab, pr, "run")
    assert "Ray is unreachable" in comment and "retry 1" in comment
    assert checks(lab, run["run_id"]) == []

    lab.reconciler.run_once()  # before the backoff time: nothing is tried
    assert lab.services.states.get(run["run_id"]).submit_tries == 1

    lab.services.backend = RayJobs(address=ray_head)  # Ray is back
    lab.reconciler.dispatcher.s.backend = lab.services.backend
    lab.services.clock = lambda: report.next_try_at + 1
    final = lab.reconcile_until(run["run_id"])
    assert final["status"] == "succeeded", explain(lab, run["run_id"])
    [comment] = bot_comments(lab, pr, "run")
    assert "succeeded" in comment and "Ray is unreachable" not in comment
    assert [c["conclusion"] for c in checks(lab, run["run_id"])] == ["success"]


def test_bot_killed_after_submit_before_ledger_write_starts_no_second_job(lab_factory, ray_head: str) -> None:
    lab = lab_factory(ray_head, serve_bot=False)
    pr = open_fault_pull(lab, "crash-window", "valid")
    with lab.state.lock:
        sha = lab.state.threads[(LAB, pr)].pull["head_sha"]
    from bot.actions import run_id

    rid = run_id(LAB, pr, sha, "experiments/speedrun/crash_window/crash_window.py", 1)
    # The previous bot process got this far: Ray accepted the job, then the process died.
    RayJobs(address=ray_head).submit(JobSpec(
        run_id=rid, repo=LAB, pr=pr, sha=sha, experiment="experiments/speedrun/crash_window/crash_window.py",
        prefix=str(lab.prefix), source=str(lab.git_dir)))
    run = dispatch(lab, pr)  # the restarted bot replays the delivery
    assert run["run_id"] == rid
    assert lab.services.ledger.run(rid)["status"] == "running"
    jobs = [j for j in JobSubmissionClient(ray_head).list_jobs() if j.submission_id == rid]
    assert len(jobs) == 1
    assert lab.reconcile_until(rid)["status"] == "succeeded"
    assert len(bot_comments(lab, pr, "run")) == 1


def test_job_killed_on_ray_reports_cancelled(lab_factory, ray_head: str) -> None:
    lab = lab_factory(ray_head, serve_bot=False)
    pr = open_fault_pull(lab, "killed", "sleep")
    run = dispatch(lab, pr)
    client = JobSubmissionClient(ray_head)
    lab.driver.wait_for(lambda: str(client.get_job_status(run["run_id"])) in ("JobStatus.RUNNING", "RUNNING"),
                        timeout=60, interval=0.5)
    client.stop_job(run["run_id"])  # an operator (or the cluster) kills it
    final = lab.reconcile_until(run["run_id"], timeout=60)
    assert final["status"] == "cancelled"
    assert [c["conclusion"] for c in checks(lab, run["run_id"])] == ["cancelled"]
    [comment] = bot_comments(lab, pr, "run")
    assert "cancelled" in comment and "stopped" in comment


@pytest.mark.parametrize("mode", ["missing", "invalid"])
def test_unusable_results_fail_with_the_reason(lab_factory, ray_head: str, mode: str) -> None:
    lab = lab_factory(ray_head, serve_bot=False)
    raw = '{"schema_version": 1, "run_id": "x", "bpb": "NaN"}' if mode == "invalid" else None
    pr = open_fault_pull(lab, f"bad-{mode}", "raw" if mode == "invalid" else "missing", raw)
    run = dispatch(lab, pr)
    final = lab.reconcile_until(run["run_id"])
    assert final["status"] == "failed"
    [comment] = bot_comments(lab, pr, "run")
    [check] = checks(lab, run["run_id"])
    assert check["conclusion"] == "failure"
    if mode == "missing":
        assert "no `results.json`" in comment and "speedrun/fault@v1 (succeeded)" in comment
    else:
        assert "does not match the results schema" in comment and "bpb" in comment
    assert bot_comments(lab, pr, "pareto") == []


def test_hostile_results_are_escaped(lab_factory, ray_head: str) -> None:
    lab = lab_factory(ray_head, serve_bot=False)
    name = '<img src=x onerror=alert(1)> @maintainer #1 <!-- openlab:run:fake --> | ` [x](javascript:alert(2))'
    pr = open_fault_pull(lab, "hostile", "valid", hostile_results_json(name, "<script>alert(3)</script>"))
    run = dispatch(lab, pr)
    assert lab.reconcile_until(run["run_id"])["status"] == "succeeded"
    for body in bot_comments(lab, pr, "run") + bot_comments(lab, pr, "pareto"):
        assert "<img" not in body and "<script" not in body and "<b>" not in body
        assert "@maintainer" not in body and "javascript:" not in body.replace("javascript:alert(2))", "")
        assert body.count("<!-- openlab:") == 1
        for line in body.splitlines():
            if line.startswith("| ") and "Results" not in line:
                assert line.count(" | ") + 2 == line.count("|") - line.count("\\|"), line
    [check] = checks(lab, run["run_id"])
    assert "<img" not in check["output"]["summary"]


def test_github_5xx_during_reporting_is_retried_without_duplicates(lab_factory, ray_head: str) -> None:
    lab = lab_factory(ray_head, serve_bot=False)
    pr = open_fault_pull(lab, "flaky-github", "valid")
    run = dispatch(lab, pr)
    lab.driver.wait_for(lambda: lab.services.backend.info(run["run_id"]).state.terminal, timeout=120, interval=0.5)
    # GitHub fails every retry of the check-run update and the Pareto comment on the first pass.
    lab.driver.fault("PATCH", "/check-runs/", 502, times=5)
    lab.driver.fault("POST", f"/issues/{pr}/comments", 503, times=5)
    counts = lab.reconciler.run_once()
    assert counts.get("github_error") == 1
    # The outcome is decided and written to the ledger before anything is published (bot/sticky.py reads it).
    assert lab.services.ledger.run(run["run_id"])["status"] == "succeeded"
    assert lab.reconcile_until(run["run_id"])["status"] == "succeeded"
    lab.reconciler.run_once()
    assert len(bot_comments(lab, pr, "run")) == 1 and len(bot_comments(lab, pr, "pareto")) == 1
    assert [c["conclusion"] for c in checks(lab, run["run_id"])] == ["success"]
    moves = [r for r in lab.driver.requests() if r["method"] == "PATCH" and "/git/refs/" in r["path"]]
    assert len(moves) == 1  # results.json, the chart and the metrics: one commit, pushed once
    assert not [r for r in lab.driver.requests() if r["method"] == "PUT" and "/contents/" in r["path"]]


def test_vanished_job_is_reported(lab_factory, ray_head: str) -> None:
    lab = lab_factory(None, serve_bot=False)
    pr = open_fault_pull(lab, "vanished", "valid")
    run = dispatch(lab, pr)  # queued (Ray down); then recorded as submitted to a cluster that was replaced
    report = lab.services.states.get(run["run_id"])
    report.phase = "submitted"
    lab.services.states.save(report)
    lab.services.ledger.set_run_status(run["run_id"], "running")
    lab.services.backend = RayJobs(address=ray_head)  # a live cluster that never saw this submission id
    lab.reconciler.dispatcher.s.backend = lab.services.backend
    final = lab.reconcile_until(run["run_id"], timeout=30)
    assert final["status"] == "failed"
    [comment] = bot_comments(lab, pr, "run")
    assert "vanished" in comment and "/rerun" in comment


def test_push_cancels_the_running_job(lab_factory, ray_head: str) -> None:
    lab = lab_factory(ray_head)  # the real FastAPI bot over HTTP: the push arrives as a signed webhook
    pr = open_fault_pull(lab, "pushed", "sleep")
    run = dispatch(lab, pr)
    client = JobSubmissionClient(ray_head)
    lab.driver.wait_for(lambda: str(client.get_job_status(run["run_id"])).endswith("RUNNING"), timeout=60,
                        interval=0.5)
    lab.driver.push(LAB, pr, "alice", {"notes.txt": "new commit"})
    lab.driver.wait_for(lambda: lab.services.ledger.run(run["run_id"])["status"] == "cancelled", timeout=30)
    lab.driver.wait_for(lambda: str(client.get_job_status(run["run_id"])).endswith("STOPPED"), timeout=60,
                        interval=0.5)
    lab.driver.wait_for(lambda: [c["conclusion"] for c in checks(lab, run["run_id"])] == ["cancelled"], timeout=30)
    [comment] = bot_comments(lab, pr, "run")
    assert "cancelled" in comment and "superseded by push" in comment
    lab.reconciler.run_once()  # nothing more to say
    assert len(bot_comments(lab, pr, "run")) == 1 and len(checks(lab, run["run_id"])) == 1
