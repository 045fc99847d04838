"""Real Ray end to end: `openlab run` killed mid-step and resumed; `openlab submit/status/cancel` on a
`ray start --head` cluster (127.0.0.1, token auth, usage stats off) with the job pinned to one commit."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.executor import ExperimentRecord, StepStatus, dispatch, parse_record
from runner.executor import state as st

from .conftest import REPO, write_chain

pytestmark = [pytest.mark.ray, pytest.mark.slow]
OPENLAB = str(Path(sys.executable).parent / "openlab")


def _wait(cond, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.3)


def _calls(log: Path) -> list[str]:
    return [json.loads(ln)["step"] for ln in log.read_text().splitlines()] if log.exists() else []


def test_killed_run_resumes_without_redoing_finished_steps(tmp_path: Path) -> None:
    prefix, log = tmp_path / "store", tmp_path / "calls.jsonl"
    exp = write_chain(tmp_path / "chain.py", log=str(log), sleep={"chain/c": 120})
    env = {**os.environ, "OPENLAB_LEASE_TIMEOUT_S": "3", "OPENLAB_HEARTBEAT_S": "0.5"}
    env.pop("RAY_ADDRESS", None)
    cmd = [OPENLAB, "run", str(exp), "--prefix", str(prefix), "--run-id", "first"]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        out_c = f"{prefix}/chain/c/v1"
        _wait(
            lambda: (s := st.read_status(out_c)) is not None and s.status == StepStatus.RUNNING
            and (b := st.read_status(f"{prefix}/chain/b/v1")) is not None and b.status == StepStatus.SUCCESS,
            90,
            "chain/c to be running and chain/b done",
        )  # fmt: skip
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the launcher, its embedded Ray and the worker running chain/c
        proc.wait()
    assert st.read_status(out_c).status == StepStatus.RUNNING  # type: ignore[union-attr]
    assert st.read_status(f"{prefix}/chain/d/v1") is None

    write_chain(exp, log=str(log))  # same steps and configs, no sleep
    res = subprocess.run(
        [OPENLAB, "run", str(exp), "--prefix", str(prefix), "--run-id", "second"],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    record = parse_record(ExperimentRecord, res.stdout, "stdout")
    outcomes = {s.identity: s.outcome for s in record.steps}
    assert outcomes == {
        "chain/a@v1": "skipped",
        "chain/b@v1": "skipped",
        "chain/c@v1": "succeeded",
        "chain/d@v1": "succeeded",
    }
    calls = _calls(log)
    assert (
        calls.count("chain/a@v1") == 1 and calls.count("chain/b@v1") == 1 and calls.count("chain/c@v1") == 2
    )
    assert st.read_status(out_c).run_id == "second"  # type: ignore[union-attr]
    assert Path(prefix, "chain/d/v1/out.txt").read_text() == "d+b+a+c+a"


def _repo_with_experiment(tmp_path: Path, **settings: object) -> tuple[Path, str]:
    """A git repo holding this checkout's runner/ and the diamond experiment; returns (repo, sha)."""
    repo = tmp_path / "repo"
    shutil.copytree(REPO / "runner", repo / "runner", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "experiments").mkdir()
    write_chain(repo / "experiments" / "chain.py", **settings)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "exp"], check=True)
    sha = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    return repo, sha


def test_submit_runs_exactly_the_commit_then_refuses_a_repeat(ray_head: str, tmp_path: Path) -> None:
    repo, sha = _repo_with_experiment(tmp_path)
    # An uncommitted edit must not reach the job: the job gets a checkout of exactly `sha`.
    exp = repo / "experiments" / "chain.py"
    exp.write_text(exp.read_text().replace('Write("a")', 'Write("UNCOMMITTED")'))
    prefix = tmp_path / "store"
    rid = dispatch.run_id("lab/repo", 7, sha, "experiments/chain.py", 1)
    sub = dispatch.submit(
        "experiments/chain.py",
        sha,
        address=ray_head,
        prefix=str(prefix),
        run_id=rid,
        repo=repo,
        python=sys.executable,
    )
    assert sub.run_id == rid and sub.sha == sha
    _wait(lambda: dispatch.status(rid, address=ray_head).terminal, 150, "the job to finish")
    state = dispatch.status(rid, address=ray_head)
    assert state.status == "SUCCEEDED", dispatch.logs(rid, address=ray_head)[-3000:]
    assert Path(prefix, "chain/d/v1/out.txt").read_text() == "d+b+a+c+a"
    record = parse_record(ExperimentRecord, Path(sub.experiment_record).read_text(), "record")
    assert record.status == "SUCCESS" and record.launch.run_id == rid
    assert record.launch.git.commit == sha and record.launch.ray_job_id

    with pytest.raises(dispatch.DispatchError, match="already submitted"):
        dispatch.submit(
            "experiments/chain.py", sha, address=ray_head, prefix=str(prefix), run_id=rid, repo=repo
        )

    # The CLI speaks to the same API.
    res = subprocess.run([OPENLAB, "status", rid, "--ray", ray_head], capture_output=True, text=True)
    assert res.returncode == 0 and json.loads(res.stdout)["status"] == "SUCCEEDED"
    res = subprocess.run([OPENLAB, "status", "nope", "--ray", ray_head], capture_output=True, text=True)
    assert res.returncode == 2 and "no Ray job with run id nope" in res.stderr


def test_cancel_stops_a_running_job(ray_head: str, tmp_path: Path) -> None:
    repo, sha = _repo_with_experiment(tmp_path, sleep={"chain/a": 300})
    res = subprocess.run(
        [OPENLAB, "submit", "experiments/chain.py", "--sha", sha[:10], "--ray", ray_head,
         "--prefix", str(tmp_path / "store"), "--run-id", "cancel-me", "--python", sys.executable],
        cwd=repo, capture_output=True, text=True,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["sha"] == sha
    _wait(lambda: dispatch.status("cancel-me", address=ray_head).status == "RUNNING", 60, "the job to run")
    listed = subprocess.run([OPENLAB, "status", "--json", "--ray", ray_head], capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    [row] = [r for r in json.loads(listed.stdout) if r["run_id"] == "cancel-me"]
    assert row["state"] == "RUNNING" and row["age_s"] >= 0 and row["links"]["ray"].endswith("/#/jobs/cancel-me")
    res = subprocess.run([OPENLAB, "cancel", "cancel-me", "--ray", ray_head], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    _wait(lambda: dispatch.status("cancel-me", address=ray_head).status == "STOPPED", 60, "the job to stop")
    a = st.read_status(f"{tmp_path}/store/chain/a/v1")
    assert a is None or a.status != StepStatus.SUCCESS


def test_run_id_is_pure_and_distinct() -> None:
    a = dispatch.run_id("lab/repo", 7, "ABCDEF1234567890", "experiments/exp12_x.py", 1)
    assert a == dispatch.run_id("lab/repo", 7, "abcdef1234567890", "experiments/exp12_x.py", 1)
    assert a.startswith("olr-exp12-x-pr7-abcdef1-a1-") and len(a) <= 64
    assert re.fullmatch(dispatch.RUN_ID_PATTERN, a)
    assert a != dispatch.run_id("lab-repo", 7, "abcdef1234567890", "experiments/exp12_x.py", 1)
    assert a != dispatch.run_id("lab/repo", 7, "abcdef1234567890", "experiments/exp12_x.py", 2)
