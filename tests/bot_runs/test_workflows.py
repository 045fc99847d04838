"""Actions mode: each workflow's `run:` commands executed against the sandbox with payloads recorded from it.

- openlab-events.yml: an issue form, then `/run` on a PR (dispatched to the real Ray head);
- openlab-plan.yml (unprivileged) -> artifact -> openlab-plan-report.yml (privileged): the safe split;
- openlab-reconcile.yml: follows the run to its results, attested, committed;
- leaderboard.yml: builds the site from the committed results.
tests.yml's only command is `make test` itself, which is what runs this file.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.bot_runs.conftest import LAB, Lab, git
from tests.bot_runs.experiments import write_results_experiment
from tests.bot_runs.helpers import valid_results_json
from tests.bot_runs.test_e2e import SPEEDRUN_FORM
from tests.bot_runs.workflow_runner import run_steps

pytestmark = pytest.mark.slow
ACTIONS_TOKEN = "ghs_actions_workflows"


def _record(tmp: Path, name: str, payload: dict[str, Any]) -> Path:
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(payload))
    return path


def _env(lab: Lab, tmp: Path) -> tuple[dict[str, str], dict[str, str]]:
    from runner.attest import generate_keypair

    priv, _ = generate_keypair()
    secrets = {"GITHUB_TOKEN": ACTIONS_TOKEN, "OPENLAB_LEDGER_URL": f"sqlite:///{tmp / 'actions-ledger.sqlite3'}",
               "OPENLAB_SIGNING_KEY": priv.decode(), "RAY_ADDRESS": "",
               "RAY_AUTH_TOKEN": os.environ.get("RAY_AUTH_TOKEN", "")}
    env = {"GITHUB_REPOSITORY": LAB, "GITHUB_API_URL": lab.sandbox.url, "OPENLAB_WRITE_INTERVAL_S": "0",
           "OPENLAB_STORAGE_PREFIX": str(lab.prefix), "OPENLAB_SOURCE": str(lab.git_dir),
           "OPENLAB_LEADERBOARD_RESULTS": str(tmp / "board" / "**" / "results.json")}
    return secrets, env


def _runs(tmp: Path, pr: int) -> list[dict[str, Any]]:
    """The runs the Actions-mode ledger (the OPENLAB_LEDGER_URL secret) holds for ``pr``."""
    from bot.ledger import Ledger

    return Ledger(f"sqlite:///{tmp / 'actions-ledger.sqlite3'}").runs(LAB, pr)


def _ok(results: list) -> None:
    assert results, "no run: step executed"
    for r in results:
        assert r.returncode == 0, f"step {r.name!r} failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"


def _envelope(lab: Lab, action: str, env: dict[str, Any]) -> dict[str, Any]:
    return {"action": action, **{k: v for k, v in env.items() if k != "number"}, "installation": {"id": 1}}


def test_workflows_run_commands_against_the_sandbox(lab_factory, ray_head: str, tmp_path: Path) -> None:
    lab = lab_factory(ray_head, serve_bot=False)
    lab.driver.configure(tokens={ACTIONS_TOKEN: "github-actions[bot]"})
    secrets, env = _env(lab, tmp_path)
    secrets["RAY_ADDRESS"] = ray_head
    d = lab.driver

    # 1. openlab-events.yml on `issues.opened` (a speedrun form).
    issue_env = d._ctl("issues", repo=LAB, user="alice", title="[Speedrun]: actions", body=SPEEDRUN_FORM,
                       labels=["speedrun"])
    payload = _envelope(lab, "opened", issue_env)
    _ok(run_steps("openlab-events.yml", "handle", event_name="issues", payload=payload,
                  payload_path=_record(tmp_path, "issues.opened", payload), cwd=tmp_path, secrets=secrets, env=env))
    issue = issue_env["issue"]["number"]
    assert "preregistered" in d.thread(LAB, issue)["labels"]

    # 2. openlab-plan.yml (no secrets, PR code checked out) -> artifact -> openlab-plan-report.yml (privileged).
    exp = "experiments/speedrun/actions_run/actions_run.py"
    pr_env = d._ctl("pulls", repo=LAB, user="maintainer", branch="actions-run", files={}, title="Actions run",
                    body=f"Preregistration: #{issue}")
    pr = int(pr_env["number"])
    base = lab.state.repos[LAB].branches["main"]
    head = lab.commit("actions-run", {exp: write_results_experiment(valid_results_json(7), "valid")}, base=base)
    with lab.state.lock:
        lab.state.threads[(LAB, pr)].pull["head_sha"] = head
        pr_payload = _envelope(lab, "opened", {**pr_env, "pull_request": lab.state.pull_shape(lab.state.threads[(LAB, pr)])})
    checkout = tmp_path / "pr-checkout"
    shutil.copytree(lab.git_dir, checkout)
    git(checkout, "checkout", "-q", head)
    plan_steps = run_steps("openlab-plan.yml", "plan", event_name="pull_request", payload=pr_payload,
                           payload_path=_record(tmp_path, "pull_request.opened", pr_payload), cwd=checkout,
                           secrets={}, env={"GITHUB_REPOSITORY": LAB})
    _ok(plan_steps)
    assert (checkout / "plan" / "1.file").read_text().strip() == exp
    assert json.loads((checkout / "plan" / "1.json").read_text())["experiment"].endswith("actions_run.py")
    report_dir = tmp_path / "report-job"
    shutil.copytree(checkout / "plan", report_dir / "plan")  # what download-artifact hands the privileged job
    run_event = {"workflow_run": {"id": 7, "event": "pull_request", "head_sha": head, "pull_requests": [{"number": pr}],
                                  "head_repository": {"full_name": LAB}}}  # the PR and SHA the report trusts
    _ok(run_steps("openlab-plan-report.yml", "report", event_name="workflow_run", payload=run_event,
                  payload_path=_record(tmp_path, "workflow_run.completed", run_event), cwd=report_dir,
                  secrets=secrets, env=env))
    plan_check = [c for c in lab.state.check_runs.values() if c["name"] == "openlab/plan" and c["head_sha"] == head]
    assert len(plan_check) == 1 and plan_check[0]["status"] == "completed"

    # 3. openlab-events.yml on `issue_comment.created` "/run" by a maintainer: dispatched to Ray.
    c_env = d._ctl("comments", repo=LAB, number=pr, user="maintainer", body="/run")
    payload = _envelope(lab, "created", c_env)
    steps = run_steps("openlab-events.yml", "handle", event_name="issue_comment", payload=payload,
                      payload_path=_record(tmp_path, "issue_comment.created", payload), cwd=tmp_path,
                      secrets=secrets, env={**env, "GITHUB_RUN_ID": "101"})
    _ok(steps)
    [run] = _runs(tmp_path, pr)
    assert run["status"] in ("queued", "running"), (run, steps[-1].stderr[-2000:])

    # 4. openlab-reconcile.yml (scheduled) until the run is reported; a further run changes nothing.
    for _ in range(40):
        rec = run_steps("openlab-reconcile.yml", "reconcile", event_name="schedule", payload={}, payload_path=None,
                        cwd=tmp_path, secrets=secrets, env=env)
        _ok(rec)
        check = [c for c in lab.state.check_runs.values() if c["name"] == "openlab/run" and c["head_sha"] == head]
        if check and check[0]["status"] == "completed":
            break
        time.sleep(2)
    assert len(check) == 1 and check[0]["conclusion"] == "success", (rec[-1].stdout, rec[-1].stderr[-3000:])
    comments = len(lab.state.comments)
    _ok(run_steps("openlab-reconcile.yml", "reconcile", event_name="schedule", payload={}, payload_path=None,
                  cwd=tmp_path, secrets=secrets, env=env))
    assert len(lab.state.comments) == comments
    files = d.repo_state(LAB)["files"]["actions-run"]
    committed = files["experiments/speedrun/actions_run/results.json"]

    # 5. leaderboard.yml on the merged tree: the site lists the run.
    site_repo = tmp_path / "main-checkout"
    (site_repo / "experiments" / "speedrun" / "actions_run").mkdir(parents=True)
    (site_repo / "experiments" / "speedrun" / "actions_run" / "results.json").write_text(committed)
    steps = run_steps("leaderboard.yml", "build", event_name="push", payload={}, payload_path=None, cwd=site_repo,
                      secrets=secrets, env=env)
    assert steps[0].returncode == 0, steps[0].stderr[-2000:]
    assert "fault-7" in (site_repo / "_site" / "index.html").read_text()
