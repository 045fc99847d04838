"""Actions mode: `openlab event NAME PAYLOAD.json` with GITHUB_TOKEN against the sandbox, and `plan_report`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bot.sandbox.driver import SandboxDriver
from bot.sandbox.state import SandboxState
from bot.sticky import section_of
from tests.bot.helpers import REPO, SECRET, bot_comments, experiment_body, experiment_file, repo_files


def _openlab(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runner.cli", *args], cwd=cwd, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120)


def test_event_and_plan_report(tmp_path: Path, sandbox: tuple[str, SandboxState]) -> None:
    url, _ = sandbox
    d = SandboxDriver(url, None, SECRET)
    d.setup_repo(REPO, repo_files(), tokens={"ghs_actions_token": "github-actions[bot]"},
                 roles={"maintainer": "write"})
    env = {"GITHUB_TOKEN": "ghs_actions_token", "GITHUB_API_URL": url, "GITHUB_REPOSITORY": REPO,
           "OPENLAB_WRITE_INTERVAL_S": "0", "OPENLAB_LEDGER_URL": f"sqlite:///{tmp_path}/ledger.sqlite3"}
    issue_env = d._ctl("issues", repo=REPO, user="alice", title="[Experiment]: Act", body=experiment_body(),
                       labels=["experiment"])
    payload = {"action": "opened", **{k: issue_env[k] for k in ("issue", "repository", "sender")}}
    (tmp_path / "event.json").write_text(json.dumps(payload))
    r = _openlab(["event", "issues", str(tmp_path / "event.json")], tmp_path, env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1])["status"] == "done"
    n = issue_env["issue"]["number"]
    t = d.thread(REPO, n)
    assert "preregistered" in t["labels"]
    assert [c["user"] for c in t["comments"]] == ["github-actions[bot]"]
    # same run again: claimed already, nothing new
    r = _openlab(["event", "issues", str(tmp_path / "event.json")], tmp_path, env)
    assert "already handled" in r.stdout and len(d.thread(REPO, n)["comments"]) == 1

    pr_env = d._ctl("pulls", repo=REPO, user="alice", branch="x", title="Act",
                    files={f"experiments/exp{n:03d}_act.py": experiment_file(n)}, body="")
    head = pr_env["pull_request"]["head"]["sha"]
    plan_dir = tmp_path / "plan"
    plan_dir.mkdir()
    (plan_dir / "meta.json").write_text(json.dumps({"pr": pr_env["number"], "head_sha": head}))
    (plan_dir / "1.file").write_text(f"experiments/exp{n:03d}_act.py\n")
    (plan_dir / "1.json").write_text('{"not": "a plan"}')
    run_event = {"workflow_run": {"id": 7, "event": "pull_request", "head_sha": head,
                                  "pull_requests": [{"number": pr_env["number"]}]}}
    (tmp_path / "workflow_run.json").write_text(json.dumps(run_event))  # the PR and SHA come from the event
    r = _openlab(["event", "plan_report", str(plan_dir)], tmp_path,
                 {**env, "GITHUB_EVENT_PATH": str(tmp_path / "workflow_run.json")})
    assert r.returncode == 0, r.stderr
    t = d.thread(REPO, pr_env["number"])
    [check] = t["check_runs"]
    assert check["conclusion"] == "failure" and check["head_sha"] == head
    [body] = [s for c in t["comments"] for s in section_of(c["body"], "plan")]  # in the sticky PR comment
    assert "plan output is not a valid Plan" in body

    r = _openlab(["event", "issues", str(tmp_path / "missing.json")], tmp_path, env)
    assert r.returncode == 2 and "error" in r.stderr.lower() and "Traceback" not in r.stderr
    r = _openlab(["event", "issues", str(tmp_path / "event.json")], tmp_path, {**env, "GITHUB_TOKEN": ""})
    assert r.returncode == 2 and r.stderr.strip() == "error: GITHUB_TOKEN is not set (Actions mode)"
    assert bot_comments(t) == []  # nothing posted as the App in Actions mode
