"""End to end over real HTTP, real Ray and a real CPU training run:
issue form -> PR -> plan check -> /run -> Ray job -> results comment -> Pareto comment -> check success ->
results committed to the PR branch, attested by the lab key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner import attest
from runner.schema import loads_results
from tests.bot_runs.conftest import LAB
from tests.bot_runs.experiments import TINY_SPEEDRUN
from tests.bot_runs.helpers import bot_comments
from tests.leaderboard.factory import make_results

pytestmark = pytest.mark.slow

SPEEDRUN_FORM = """### Author name

Ada Lovelace

### Affiliation

Analytical Engines

### URL

_No response_

### Description

A one-layer byte model to check the pipeline.

### Track

all

### Planned FLOPs

1e12

### Starter branch

- [ ] Create a starter branch and draft PR for me
"""


def _seed_leaderboard(root: Path) -> None:
    """Two runs already on the leaderboard: one far better at huge FLOPs, one worse at more FLOPs."""
    for i, (bpb, flops) in enumerate([(1.0, 1e18), (7.9, 1e15)]):
        r = make_results(i, bpb=bpb, model_flops=flops, name=f"board-{i}", run_id=f"board-{i}")
        p = root / f"r{i}" / "results.json"
        p.parent.mkdir(parents=True)
        p.write_text(r.model_dump_json())


def test_issue_to_committed_results(lab_factory, ray_head: str, tmp_path: Path) -> None:
    lab = lab_factory(ray_head)
    d = lab.driver
    _seed_leaderboard(Path(lab.services.leaderboard_results.split("**")[0]))

    issue = d.open_issue(LAB, "alice", "[Speedrun]: tiny e2e", SPEEDRUN_FORM, labels=["speedrun"])
    d.wait_for(lambda: "preregistered" in d.thread(LAB, issue)["labels"], timeout=30)

    pr = lab.open_pull("alice", "tiny-e2e", {"experiments/speedrun/tiny_e2e/tiny_e2e.py": TINY_SPEEDRUN},
                       "Tiny e2e speedrun", f"Preregistration: #{issue}")
    head = d.thread(LAB, pr)["head_sha"]
    d.wait_for(lambda: any(c["name"] == "openlab/plan" and c["status"] == "completed"
                           for c in d.thread(LAB, pr)["check_runs"]), timeout=90)

    comment_id, _ = d.comment(LAB, pr, "maintainer", "/run")
    d.wait_for(lambda: lab.services.ledger.runs(LAB, pr), timeout=30)
    run = lab.run(pr)
    assert run["sha"] == head
    d.wait_for(lambda: lab.services.ledger.run(run["run_id"])["status"] in ("running", "failed", "refused"),
               timeout=60)
    assert lab.services.ledger.run(run["run_id"])["status"] == "running", lab.services.states.get(run["run_id"])

    # The ledger says running first; the 🚀, the check and the comment follow within the same dispatch.
    def announced() -> dict | None:
        t = d.thread(LAB, pr)
        return t if any(f"openlab:run:{run['run_id']}" in c["body"] for c in t["comments"]) else None

    t = d.wait_for(announced, timeout=30)
    assert any(r["content"] == "rocket" and r["comment_id"] == comment_id for r in t["reactions"])
    check = next(c for c in t["check_runs"] if c["name"] == "openlab/run")
    assert check["status"] == "in_progress" and check["external_id"] == run["run_id"]
    assert any(f"openlab:run:{run['run_id']}" in c["body"] and "running" in c["body"] for c in t["comments"])

    final = lab.reconcile_until(run["run_id"])
    assert final["status"] == "succeeded", lab.services.states.get(run["run_id"])

    t = d.thread(LAB, pr)  # the head moved: the bot committed the results
    [run_comment] = bot_comments(lab, pr, "run")  # sections of the one sticky PR comment
    assert "Results: tiny_e2e" in run_comment and "| val |" in run_comment
    assert "xychart-beta" in run_comment and "Attested" in run_comment, run_comment
    assert "Committed `experiments/speedrun/tiny_e2e/results.json`" in run_comment
    [pareto] = bot_comments(lab, pr, "pareto")
    assert "Pareto update" in pareto and "Compared with 2 runs" in pareto

    checks = [c for c in lab.state.check_runs.values() if c["name"] == "openlab/run"]
    assert [c["conclusion"] for c in checks] == ["success"]
    assert checks[0]["head_sha"] == head

    files = d.repo_state(LAB)["files"]["tiny-e2e"]
    committed = loads_results(files["experiments/speedrun/tiny_e2e/results.json"])
    # One commit on top of the run's head (one push, one synchronize) holds the results, the chart and the metrics.
    repo = lab.state.repos[LAB]
    tip = repo.branches["tiny-e2e"]
    assert repo.parents[tip] == [head] and repo.messages[tip].startswith(f"openlab: results of run {run['run_id']}")
    added = {p for p in repo.commits[tip] if repo.commits[tip][p] != repo.commits[head].get(p)}
    folder = "experiments/speedrun/tiny_e2e"
    assert added == {f"{folder}/results.json", f"{folder}/pareto.svg", f"{folder}/metrics.jsonl"}
    metric_lines = [json.loads(line) for line in files[f"{folder}/metrics.jsonl"].splitlines()]
    assert metric_lines and all(isinstance(m["step"], int | float) for m in metric_lines)
    assert any("train/loss" in m for m in metric_lines) and not any("time" in m for m in metric_lines)
    assert committed.attestation is not None and committed.attestation.sha == head
    assert committed.attestation.run_id == run["run_id"]
    assert attest.verify(committed, lab.public_pem)
    assert committed.bpb < 8.0

    # Reconciling again posts nothing: same comments, same checks, no new commits.
    before = (json.dumps(d.thread(LAB, pr)["comments"]), len(lab.state.check_runs), dict(d.repo_state(LAB)["branches"]))
    writes = [r for r in d.requests() if r["method"] != "GET"]
    lab.reconciler.run_once()
    assert (json.dumps(d.thread(LAB, pr)["comments"]), len(lab.state.check_runs),
            dict(d.repo_state(LAB)["branches"])) == before
    assert [r for r in d.requests() if r["method"] != "GET"] == writes
