"""The executor on an embedded Ray in this process: run, skip, fail, re-run, drift, wait and take over."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner import store
from runner.executor import (
    ExperimentRecord,
    RunOptions,
    StepRecord,
    StepStatus,
    parse_record,
    plan_experiment,
    run_experiment,
)
from runner.executor import state as st
from runner.executor.planner import PlanError

from .conftest import write_chain

pytestmark = pytest.mark.ray

QUIET = RunOptions(log=lambda _m: None, poll_s=0.2)


def _calls(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [json.loads(ln)["step"] for ln in log.read_text().splitlines()]


def test_run_writes_outputs_and_provenance_then_skips(
    ray_local: None, chain_file: Path, tmp_path: Path
) -> None:
    prefix = str(tmp_path / "store")
    report = run_experiment(chain_file, prefix, run_id="r1", options=QUIET)
    assert report.ok, report.failures
    assert Path(prefix, "chain/d/v1/out.txt").read_text() == "d+b+a+c+a"
    assert sorted(_calls(tmp_path / "calls.jsonl")) == [
        "chain/a@v1",
        "chain/b@v1",
        "chain/c@v1",
        "chain/d@v1",
    ]

    rec = parse_record(StepRecord, Path(prefix, "chain/d/v1/.step.json").read_text(), "d")
    assert rec.status == StepStatus.SUCCESS and rec.identity == "chain/d@v1"
    assert rec.deps == ["chain/b@v1", "chain/c@v1"]
    assert rec.config["inputs"] == [f"{prefix}/chain/b/v1", f"{prefix}/chain/c/v1"]
    assert rec.fingerprint_payload["config"]["inputs"] == ["step://chain/b@v1", "step://chain/c@v1"]
    assert rec.result == {"chars": 9} and rec.launch.run_id == "r1" and rec.launch.ray_job_id
    assert rec.launch.user and rec.launch.argv and rec.launch.experiment.endswith("chain.py")
    assert rec.finished_at and rec.finished_at >= rec.started_at
    assert not Path(prefix, "chain/d/v1/.lease.json").exists()

    exp = parse_record(ExperimentRecord, Path(report.record_path).read_text(), "exp")
    assert exp.status == "SUCCESS" and {s.outcome for s in exp.steps} == {"succeeded"}
    assert report.record_path == f"{prefix}/experiments/r1.json"

    again = run_experiment(chain_file, prefix, run_id="r2", options=QUIET)
    assert again.ok and {s.outcome for s in again.record.steps} == {"skipped"}
    assert len(_calls(tmp_path / "calls.jsonl")) == 4  # nothing ran twice


def test_failure_stops_descendants_and_all_failures_are_reported(ray_local: None, tmp_path: Path) -> None:
    prefix = str(tmp_path / "store")
    exp = write_chain(tmp_path / "chain.py", log=str(tmp_path / "calls.jsonl"), fail=["chain/b", "chain/c"])
    report = run_experiment(exp, prefix, run_id="f1", options=QUIET)
    assert not report.ok
    assert len(report.failures) == 2
    assert all("was told to fail" in f and "chain.py:" in f for f in report.failures)
    outcomes = {s.identity: s.outcome for s in report.record.steps}
    assert outcomes == {
        "chain/a@v1": "succeeded",
        "chain/b@v1": "failed",
        "chain/c@v1": "failed",
        "chain/d@v1": "blocked",
    }
    assert st.read_status(f"{prefix}/chain/b/v1").status == StepStatus.FAILED  # type: ignore[union-attr]
    assert st.read_status(f"{prefix}/chain/d/v1") is None  # never started, never marked
    assert report.record.status == "FAILED"

    # Without --rerun-failed a failed step stays failed; with it, only the failed steps and d run.
    still = run_experiment(exp, prefix, run_id="f2", options=QUIET)
    assert not still.ok and "pass --rerun-failed" in still.failures[0]
    write_chain(exp, log=str(tmp_path / "calls.jsonl"))
    fixed = run_experiment(exp, prefix, run_id="f3", options=RunOptions(rerun_failed=True, log=QUIET.log))
    assert fixed.ok, fixed.failures
    assert _calls(tmp_path / "calls.jsonl").count("chain/a@v1") == 1


def test_changed_config_under_same_version_warns_or_errors(
    ray_local: None, chain_file: Path, tmp_path: Path
) -> None:
    prefix = str(tmp_path / "store")
    assert run_experiment(chain_file, prefix, options=QUIET).ok
    chain_file.write_text(chain_file.read_text().replace('Write("a")', 'Write("A")'))
    plan = plan_experiment(chain_file, prefix)
    a = next(s for s in plan.steps if s.identity == "chain/a@v1")
    assert a.action == "skip" and "config changed" in a.reason
    assert plan.warnings == [
        "step chain/a@v1: config changed under the same version: config.text: 'a' -> 'A'"
    ]
    with pytest.raises(PlanError, match=r"chain.py:\d+: step chain/a@v1: config changed .*'a' -> 'A'"):
        plan_experiment(chain_file, prefix, strict=True)


def test_waits_for_a_live_lease_and_takes_over_a_stale_one(
    ray_local: None, chain_file: Path, tmp_path: Path
) -> None:
    prefix = str(tmp_path / "store")
    out_a = f"{prefix}/chain/a/v1"
    st.write_status(out_a, StepStatus.RUNNING, "other-run", "other-worker")
    st.acquire_lease(out_a, "other-worker", "other-run", timeout_s=1.5)
    plan = {s.identity: s for s in plan_experiment(chain_file, prefix).steps}
    assert (
        plan["chain/a@v1"].action == "wait"
        and "running elsewhere: run other-run" in plan["chain/a@v1"].reason
    )

    report = run_experiment(chain_file, prefix, run_id="t1", options=QUIET)  # waits ~1.5 s, then takes over
    assert report.ok, report.failures
    assert st.read_status(out_a).run_id == "t1"  # type: ignore[union-attr]

    st.write_status(out_a, StepStatus.RUNNING, "dead-run", "dead")  # a status with no lease at all
    plan = {s.identity: s for s in plan_experiment(chain_file, prefix).steps}
    assert plan["chain/a@v1"].action == "run" and "take over" in plan["chain/a@v1"].reason


def test_plan_output_paths_ignore_the_prefix_in_identity(chain_file: Path, tmp_path: Path) -> None:
    p1 = plan_experiment(chain_file, str(tmp_path / "one"))
    p2 = plan_experiment(chain_file, "memory://elsewhere/prefix")
    assert [s.fingerprint for s in p1.steps] == [s.fingerprint for s in p2.steps]
    assert p2.steps[-1].output_path == "memory://elsewhere/prefix/chain/d/v1"
    assert p2.steps[-1].config["inputs"][0] == "memory://elsewhere/prefix/chain/b/v1"
    assert store.join("a/", "b") == "a/b"
