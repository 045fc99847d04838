"""Status, lease and records on real storage: a local folder and fsspec's memory://."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from runner.executor import state
from runner.executor.records import ExperimentRecord, LaunchInfo, StepStatus, parse_record
from runner.executor.state import LeaseHeld


@pytest.fixture(params=["local", "memory"])
def out(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "local":
        return str(tmp_path / "step" / "v1")
    return f"memory://openlab-{uuid.uuid4().hex[:8]}/step/v1"


def test_lease_is_exclusive_until_stale(out: str) -> None:
    first = state.acquire_lease(out, "w1", "run1", timeout_s=0.5)
    with pytest.raises(LeaseHeld, match="held by w1"):
        state.acquire_lease(out, "w2", "run2", timeout_s=0.5)
    state.heartbeat(out, first)
    time.sleep(0.7)  # no heartbeat: stale
    taken = state.acquire_lease(out, "w2", "run2", timeout_s=0.5)
    assert taken.owner == "w2" and state.read_lease(out).owner == "w2"  # type: ignore[union-attr]
    state.release_lease(out, "w1")  # not w1's any more: left alone
    assert state.read_lease(out).owner == "w2"  # type: ignore[union-attr]
    state.release_lease(out, "w2")
    assert state.read_lease(out) is None


def test_heartbeat_thread_keeps_lease_fresh(out: str) -> None:
    lease = state.acquire_lease(out, "w1", "r", timeout_s=0.6)
    with state.Heartbeat(out, lease, interval_s=0.1):
        time.sleep(1.0)
        assert not state.read_lease(out).is_stale()  # type: ignore[union-attr]


def test_status_round_trip_and_garbage_is_no_status(out: str) -> None:
    assert state.read_status(out) is None
    state.write_status(out, StepStatus.FAILED, "r1", "w", "boom")
    st = state.read_status(out)
    assert st is not None and st.status == StepStatus.FAILED and st.message == "boom"
    from runner import store

    store.atomic_write_text(store.join(out, ".status.json"), "{not json")
    assert state.read_status(out) is None


def test_unwritable_prefix_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(state.StorageError, match="not writable"):
        state.check_prefix_writable(str(blocker / "sub"))


def test_records_reject_newer_schema() -> None:
    rec = ExperimentRecord(launch=LaunchInfo(run_id="r", experiment="e.py", prefix="/p"), steps=[])
    data = rec.model_dump(mode="json") | {"schema_version": 99}
    import json

    with pytest.raises(Exception, match="newer"):
        parse_record(ExperimentRecord, json.dumps(data), "x.json")
    assert parse_record(ExperimentRecord, rec.model_dump_json(), "x.json").launch.run_id == "r"
