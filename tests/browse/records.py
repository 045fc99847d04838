"""Writes executor records exactly as the executor does (through its models), for page tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from runner import store
from runner.executor.records import (
    ExperimentRecord,
    ExperimentStep,
    GitInfo,
    LaunchInfo,
    StatusRecord,
    StepRecord,
    StepStatus,
    dumps_record,
)

T0 = datetime(2026, 11, 21, 9, 0, tzinfo=UTC)


def write_launch(prefix: str, run_id: str, outcomes: dict[str, str], status: str = "RUNNING") -> str:
    """A 4-step diamond: ingest -> (tokenize, filter) -> train. ``outcomes`` maps step name -> outcome."""
    launch = LaunchInfo(
        run_id=run_id,
        experiment="experiments/exp1_demo.py",
        prefix=prefix,
        user="ada",
        git=GitInfo(remote="git@github.com:lab/openlab.git", commit="a" * 40, dirty=False),
    )
    deps = {
        "ingest": [],
        "tokenize": ["ingest@v1"],
        "filter": ["ingest@v1"],
        "train": ["tokenize@v1", "filter@v1"],
    }
    steps = []
    for i, (name, d) in enumerate(deps.items()):
        out = f"{prefix}/{name}/v1"
        outcome = outcomes.get(name, "pending")
        started = T0 + timedelta(minutes=i) if outcome != "pending" else None
        finished = started + timedelta(seconds=30) if started and outcome in ("succeeded", "failed") else None
        steps.append(
            ExperimentStep(
                identity=f"{name}@v1",
                kind=name,
                output_path=out,
                action="run",
                reason="not done yet",
                outcome=outcome,
                started_at=started,
                finished_at=finished,
                error="RuntimeError: <b>boom</b>" if outcome == "failed" else None,
            )
        )
        if outcome != "pending":
            rec = StepRecord(
                name=name,
                version="v1",
                identity=f"{name}@v1",
                kind=name,
                fn=f"demo.{name}",
                fingerprint="f" * 64,
                fingerprint_payload={"x": i},
                config={"lr": 0.1, "note": "<script>x</script>"},
                deps=d,
                output_path=out,
                status=StepStatus.RUNNING if outcome == "running" else StepStatus.SUCCESS,
                launch=launch,
                worker="w",
                started_at=started or T0,
                result={"tracking": {"wandb_url": "https://wandb.ai/lab/openlab/runs/r1"}}
                if name == "train"
                else None,
            )
            store.atomic_write_text(f"{out}/.step.json", dumps_record(rec))
            st = {"running": StepStatus.RUNNING, "failed": StepStatus.FAILED}.get(outcome, StepStatus.SUCCESS)
            store.atomic_write_text(
                f"{out}/.status.json", dumps_record(StatusRecord(status=st, run_id=run_id, worker="w"))
            )
    record = ExperimentRecord(
        launch=launch,
        status=status,
        started_at=T0,
        steps=steps,
        failures=["filter@v1: RuntimeError: <b>boom</b>"] if "failed" in outcomes.values() else [],
    )
    url = f"{prefix}/experiments/{run_id}.json"
    store.atomic_write_text(url, dumps_record(record))
    return url
