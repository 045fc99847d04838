"""One sticky comment per PR, true to the ledger at every step; the preregistration's credit reaches the results.

Real parts throughout: the bot served over HTTP, the GitHub sandbox, a real git repository, a real Ray head for the
run that succeeds, the leaderboard build. Only GitHub is simulated (the sandbox).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bot.actions import RecordApproval
from runner.schema import loads_results
from tests.bot_runs.conftest import LAB, Lab
from tests.bot_runs.experiments import write_results_experiment
from tests.bot_runs.helpers import dispatch, open_fault_pull
from tests.leaderboard.factory import make_results

FORM = """### Author name

Ada Lovelace

### Affiliation

Analytical Engines

### URL

https://example.org/ada

### Description

Notes on the analytical engine, as a speedrun.

### Track

all

### Planned FLOPs

1e15

### Starter branch

- [ ] Create a starter branch and draft PR for me
"""
BOT = "openlab[bot]"


def _threads(lab: Lab, pr: int) -> dict[str, Any]:
    return lab.driver.thread(LAB, pr)


def sticky(lab: Lab, pr: int) -> str:
    """The PR's one bot comment besides replies to failed commands (there must be exactly one)."""
    mine = [c for c in _threads(lab, pr)["comments"] if c["user"] == BOT]
    others = [c["body"] for c in mine if not c["body"].startswith("<!-- openlab:reply:")]
    assert len(others) == 1, [b[:80] for b in others]
    assert others[0].startswith(f"<!-- openlab:pr:{pr} -->")
    return others[0]


def assert_true_to_ledger(lab: Lab, pr: int, body: str) -> None:
    """Every run's state in the comment (table row and heading) is the ledger's; nothing of the bot's disk."""
    for run in lab.services.ledger.runs(LAB, pr):
        [row] = [ln for ln in body.splitlines() if ln.startswith("|") and f"`{run['run_id']}`" in ln]
        assert f"| {run['status']} |" in row, (row, run["status"])
        for heading in re.findall(rf"^#### .* run `{re.escape(run['run_id'])}`: (\w+)$", body, re.M):
            assert heading == run["status"]
    for local in (str(lab.prefix), str(lab.git_dir), "/tmp/", "file://"):
        assert local not in body


def assert_checks_true_to_ledger(lab: Lab, pr: int) -> None:
    """Each run's check run says what the ledger says: in progress while it runs, the outcome's conclusion after."""
    from bot.runs.publish import CHECK_CONCLUSION

    checks = {c["external_id"]: c for c in lab.state.check_runs.values() if c["name"] == "openlab/run"}
    for run in lab.services.ledger.runs(LAB, pr):
        check = checks[run["run_id"]]
        if run["status"] == "running":
            assert check["status"] == "in_progress", check
        else:
            assert check["status"] == "completed" and check["conclusion"] == CHECK_CONCLUSION[run["status"]], check


def test_one_true_sticky_comment_and_credit(lab_factory, ray_head: str, tmp_path: Path) -> None:
    lab = lab_factory(ray_head)
    d = lab.driver
    board = Path(lab.services.leaderboard_results.split("**")[0])
    (board / "r0").mkdir(parents=True)
    (board / "r0" / "results.json").write_text(
        make_results(0, bpb=1.5, model_flops=1e14, name="record-run", run_id="record-run").model_dump_json())

    issue = d.open_issue(LAB, "alice", "[Speedrun]: engine notes", FORM, labels=["speedrun"])
    d.wait_for(lambda: "preregistered" in _threads(lab, issue)["labels"], timeout=30)
    # The PR's own results claim another author: that is not credit.
    forged = json.loads(make_results(5, run_id="x", name="engine_notes").model_dump_json())
    forged["author"] = {"name": "Mallory Forger", "affiliation": "Nowhere", "url": None}
    path = "experiments/speedrun/engine_notes/engine_notes.py"
    pr = lab.open_pull("alice", "engine-notes", {path: write_results_experiment(json.dumps(forged), "valid")},
                       "Engine notes", f"Preregistration: #{issue}")
    d.wait_for(lambda: any("<!-- openlab:plan:" in c["body"] and "openlab plan for" in c["body"]
                           for c in _threads(lab, pr)["comments"]), timeout=90)
    body = sticky(lab, pr)
    assert "<!-- openlab:plan:" in body and "No approval for the current head" in body

    # A refused command: 😕 and a short reply; the sticky comment still says no approval.
    bad, _ = d.comment(LAB, pr, "alice", "/run")
    d.wait_for(lambda: any(r["comment_id"] == bad and r["content"] == "confused"
                           for r in _threads(lab, pr)["reactions"]), timeout=30)
    replies = [c for c in _threads(lab, pr)["comments"] if c["body"].startswith("<!-- openlab:reply:")]
    assert len(replies) == 1 and "`read` access" in replies[0]["body"]
    body = sticky(lab, pr)
    assert "Approved" not in body and lab.services.ledger.runs(LAB, pr) == []

    # An accepted command: 👍, no reply; the run shows as the ledger has it (running until reconciled).
    good, _ = d.comment(LAB, pr, "maintainer", "/run")
    d.wait_for(lambda: any(r["comment_id"] == good and r["content"] == "+1"
                           for r in _threads(lab, pr)["reactions"]), timeout=60)
    run = lab.run(pr)
    d.wait_for(lambda: f"`{run['run_id']}`" in sticky(lab, pr), timeout=30)
    assert lab.services.ledger.run(run["run_id"])["status"] == "running"
    body = sticky(lab, pr)
    assert "Approved for" in body and "| running |" in body
    assert_true_to_ledger(lab, pr, body)
    assert_checks_true_to_ledger(lab, pr)
    assert len([c for c in _threads(lab, pr)["comments"] if c["body"].startswith("<!-- openlab:reply:")]) == 1

    final = lab.reconcile_until(run["run_id"])
    assert final["status"] == "succeeded", lab.services.states.get(run["run_id"])
    body = sticky(lab, pr)
    assert_true_to_ledger(lab, pr, body)
    assert "| succeeded |" in body and "| running |" not in body
    assert_checks_true_to_ledger(lab, pr)
    assert "Pareto update" in body and "vs current record" in body and "record-run" in body
    assert "Compared with 1 run of the leaderboard." in body
    chart = "experiments/speedrun/engine_notes/pareto.svg"
    tip = lab.state.repos[LAB].branches["engine-notes"]  # the image is pinned to the results commit
    assert f"![BPB vs FLOPs: this run against the frontier](http://sandbox.invalid/{LAB}/blob/{tip}/{chart}" \
        f"?raw=true)" in body

    # The credit: from the issue form, not the PR's file; the leaderboard shows it.
    files = d.repo_state(LAB)["files"]["engine-notes"]
    committed = loads_results(files["experiments/speedrun/engine_notes/results.json"])
    assert files[chart].startswith("<?xml") and "BPB vs FLOPs" in files[chart] and "record-run" not in files[chart]
    assert committed.author is not None and committed.author.name == "Ada Lovelace"
    assert committed.author.affiliation == "Analytical Engines" and committed.author.url == "https://example.org/ada"
    assert committed.description == "Notes on the analytical engine, as a speedrun."
    assert committed.provenance.issue == issue and committed.provenance.pr == pr
    assert (committed.provenance.issue_url or "").endswith(f"/{LAB}/issues/{issue}")
    assert committed.attestation is not None and committed.attestation.signature  # signed after the credit
    (board / "r1").mkdir()
    (board / "r1" / "results.json").write_text(files["experiments/speedrun/engine_notes/results.json"])
    from leaderboard.site import BuildOptions, build_site
    from leaderboard.tracks import load_tracks

    site = tmp_path / "site"
    build_site(BuildOptions(sources=[lab.services.leaderboard_results], out=site, tracks=load_tracks(None),
                            workers=1))
    text = "\n".join(p.read_text(errors="replace") for p in site.rglob("*") if p.suffix in (".html", ".json"))
    assert "Ada Lovelace" in text and "Mallory" not in text


def test_queued_then_refused_never_says_approved(lab_factory) -> None:
    lab = lab_factory(None, serve_bot=False)  # Ray at a closed port: the run waits in the queue
    pr = open_fault_pull(lab, "refused-run", "valid")
    with lab.state.lock:
        sha = lab.state.threads[(LAB, pr)].pull["head_sha"]
    _, executor = lab.bot.env_for(1)
    executor.apply(RecordApproval(repo=LAB, pr=pr, sha=sha, approved_by="maintainer", via="command"))
    run = dispatch(lab, pr)
    assert lab.services.ledger.run(run["run_id"])["status"] == "queued"
    body = sticky(lab, pr)
    assert_true_to_ledger(lab, pr, body)
    assert "| queued |" in body and "Ray is unreachable" in body

    with lab.state.lock:
        lab.state.threads[(LAB, pr)].state = "closed"
    report = lab.services.states.get(run["run_id"])
    lab.services.clock = lambda: report.next_try_at + 1
    lab.reconciler.run_once()
    assert lab.services.ledger.run(run["run_id"])["status"] == "refused"
    body = sticky(lab, pr)
    assert_true_to_ledger(lab, pr, body)
    assert "Approved" not in body and "approved" not in body.lower().replace("approved-to-run", "")
    assert "refused" in body and "the pull request is closed" in body
