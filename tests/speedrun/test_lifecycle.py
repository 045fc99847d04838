"""`/verify` end to end over real HTTP, a real `ray start --head` and real CPU training: 3 seeds of a tiny
speedrun reproduce and become the track's first record (record page with its CI); a deliberately worse submission
reproduces but is not accepted and its comment says why; a 3-budget suite plans with every member and runs into
one fitted curve with a slope on the site."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from runner.cli import main
from runner.reproduction import Reproduction, verify_reproduction
from tests.bot_runs.conftest import LAB, REPO_ROOT
from tests.bot_runs.test_e2e import SPEEDRUN_FORM
from tests.speedrun.experiments import SUITE, TINY

pytestmark = pytest.mark.slow


def _config(**speedrun: object) -> str:
    data = yaml.safe_load((REPO_ROOT / ".github" / "openlab.yml").read_text())
    data["speedrun"] = speedrun
    return yaml.safe_dump(data)


def _verify(lab, pr: int) -> tuple[dict, str]:  # noqa: ANN001 - the bot_runs Lab
    d = lab.driver
    d.wait_for(lambda: any(c["name"] == "openlab/plan" and c["status"] == "completed"
                           for c in d.thread(LAB, pr)["check_runs"]), timeout=120)
    d.comment(LAB, pr, "maintainer", "/verify")
    run = d.wait_for(lambda: next(iter(lab.services.ledger.runs(LAB, pr)), None), timeout=30)
    # The bot announces the run from its webhook thread; reconcile only after that (as the e2e test does).
    d.wait_for(lambda: any(f"openlab:run:{run['run_id']}" in c["body"] for c in d.thread(LAB, pr)["comments"]),
               timeout=60)
    final = lab.reconcile_until(run["run_id"], timeout=400)
    body = next(c["body"] for c in d.thread(LAB, pr)["comments"] if f"openlab:run:{run['run_id']}" in c["body"])
    return final, body


def test_verify_records_and_a_worse_submission(lab_factory, ray_head: str, tmp_path: Path) -> None:
    lab = lab_factory(ray_head)
    d = lab.driver
    lab.commit("main", {".github/openlab.yml": _config(tolerance_bpb=0.5)})
    issue = d.open_issue(LAB, "alice", "[Speedrun]: tiny verify", SPEEDRUN_FORM, labels=["speedrun"])
    d.wait_for(lambda: "preregistered" in d.thread(LAB, issue)["labels"], timeout=30)
    pr = lab.open_pull("alice", "fast", {"experiments/speedrun/fast/fast.py": TINY.format(name="fast", lr=0.01)},
                       "Fast tiny speedrun", f"Preregistration: #{issue}")

    # Someone untrusted: a clear reply, no run.
    d.comment(LAB, pr, "alice", "/verify")
    d.wait_for(lambda: any("read" in c["body"] and "verify" in c["body"] for c in d.thread(LAB, pr)["comments"]
                           if c["user"] == "openlab[bot]"), timeout=30)
    assert lab.services.ledger.runs(LAB, pr) == []

    final, body = _verify(lab, pr)
    assert final["status"] == "succeeded", body
    assert "reproduced" in body and "3 of 3 succeeded" in body and "95% CI" in body, body
    assert "🏆 accepted" in body and "first reproduced record of track `cpu`" in body, body
    assert "author | alice (Analytical Engines)" in body  # from the PR and the preregistration
    docs = sorted(lab.prefix.glob("reproductions/*/reproduction.json"))
    rec = Reproduction.model_validate_json(docs[0].read_text())
    assert [s.seed for s in rec.seeds] == [0, 1, 2] and len(set(rec.bpbs())) == 3  # seeds really differ
    assert rec.summary is not None and rec.summary.ci_low < rec.summary.mean < rec.summary.ci_high
    assert verify_reproduction(rec, lab.public_pem) and rec.author == "alice"
    assert len(list(lab.prefix.glob(f"attested/{rec.run_id}/seed*/results.json"))) == 3

    # A deliberately worse submission (no learning: same FLOPs, higher BPB), verified with 2 seeds.
    lab.commit("main", {".github/openlab.yml": _config(tolerance_bpb=0.5, verify_seeds=2)})
    pr2 = lab.open_pull("alice", "slow", {"experiments/speedrun/slow/slow.py": TINY.format(name="slow", lr=1e-7)},
                        "Slow tiny speedrun", f"Preregistration: #{issue}")
    final2, body2 = _verify(lab, pr2)
    assert final2["status"] == "succeeded", body2
    assert "2 of 2 succeeded" in body2 and "not accepted" in body2, body2
    assert f"is not lower than record `{rec.run_id}`" in body2 and "Welch p" in body2, body2

    site = tmp_path / "site"
    key = tmp_path / "lab.pub"
    key.write_bytes(lab.public_pem)
    res = CliRunner().invoke(main, ["leaderboard", "build", "--results", str(tmp_path / "none" / "*.json"),
                                    "--reproductions", str(lab.prefix / "reproductions"), "--public-key", str(key),
                                    "--out", str(site), "--workers", "1"])
    assert res.exit_code == 0, res.output
    page = (site / "records" / "cpu.html").read_text()
    rows = re.findall(r'<tr class="record" data-run="([^"]+)">(.*?)</tr>', page, re.S)
    assert [r[0] for r in rows] == [rec.run_id]
    assert f"{rec.summary.mean:.4f} ± {rec.summary.half_width:.4f}" in rows[0][1] and "badge verified" in rows[0][1]
    assert "is not lower than record" in page

    # The suite as a PR: one plan listing every member with the total against the budget; one run; one curve.
    pr3 = lab.open_pull("alice", "suite", {"experiments/speedrun/tinysuite/tinysuite.py": SUITE}, "Tiny suite",
                        f"Preregistration: #{issue}")
    plan = d.wait_for(lambda: next((c["body"] for c in d.thread(LAB, pr3)["comments"]
                                    if "<!-- openlab:plan" in c["body"]), None), timeout=120)
    for m in ("s4", "s12", "s36"):
        assert f"speedrun/tinysuite/{m}@v1 | train" in plan, plan
    assert "Total: **" in plan and "(within)" in plan, plan
    d.comment(LAB, pr3, "maintainer", "/run")
    run3 = d.wait_for(lambda: next(iter(lab.services.ledger.runs(LAB, pr3)), None), timeout=30)
    d.wait_for(lambda: any(f"openlab:run:{run3['run_id']}" in c["body"] for c in d.thread(LAB, pr3)["comments"]),
               timeout=60)
    assert lab.reconcile_until(run3["run_id"], timeout=400)["status"] == "succeeded"
    res = CliRunner().invoke(main, ["leaderboard", "build", "--results", str(lab.prefix / "speedrun" / "**" /
                                    "results.json"), "--out", str(site), "--workers", "1"])
    assert res.exit_code == 0, res.output
    html = (site / "suites.html").read_text()
    assert html.count('class="curve"') == 1, html
    row = re.search(r'<tr class="suite" data-method="tinysuite">.*?class="num slope">([-0-9.]+)', html, re.S)
    assert row is not None and float(row.group(1)) > 0, html
