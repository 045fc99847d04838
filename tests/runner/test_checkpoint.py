"""Checkpoints: exact round trip, keep-last-N, corrupt/mismatched files, and a failed write losing nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from runner.checkpoint import Checkpointer
from runner.config import parse_config
from runner.errors import CheckpointError
from tests.runner.conftest import REPO, sub_env, tiny


def _state(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "params": {"w": rng.standard_normal((4, 3)).astype(np.float32), "b": rng.standard_normal(3).astype(np.float32)},
        "step": np.int32(seed),
        "key": np.array([1, seed], np.uint32),
    }


def test_round_trip_is_bit_exact_and_keeps_last_n(tmp_path: Path) -> None:
    cfg = parse_config(tiny())
    ck = Checkpointer(str(tmp_path), keep=2)
    for step in (1, 2, 3):
        ck.save(_state(step), step, cfg, training_seconds=step * 1.5)
    assert ck.steps() == [2, 3]
    r = ck.restore_latest(_state(0), cfg)
    assert r is not None and r.step == 3 and r.training_seconds == 4.5
    want = _state(3)
    for k in ("w", "b"):
        assert r.state["params"][k].tobytes() == want["params"][k].tobytes()
    assert np.array_equal(r.state["key"], want["key"])
    assert not list(tmp_path.glob(".*tmp"))


def test_corrupt_checkpoint_is_a_clear_error(tmp_path: Path) -> None:
    cfg = parse_config(tiny())
    ck = Checkpointer(str(tmp_path), keep=3)
    ck.save(_state(1), 1, cfg, 0.0)
    ck.save(_state(2), 2, cfg, 0.0)
    p = Path(ck.path(2))
    blob = bytearray(p.read_bytes())
    blob[200] ^= 0xFF  # flip a byte inside the array data
    p.write_bytes(bytes(blob))
    with pytest.raises(CheckpointError, match="step_00000002.npz is corrupt"):
        ck.restore_latest(_state(0), cfg)
    p.write_bytes(b"not a zip")
    with pytest.raises(CheckpointError, match="is corrupt"):
        ck.restore_latest(_state(0), cfg)
    assert Path(ck.path(1)).exists()
    assert ck.restore(1, _state(0), cfg).step == 1


def test_mismatched_config_names_the_field(tmp_path: Path) -> None:
    ck = Checkpointer(str(tmp_path), keep=3)
    ck.save(_state(1), 1, parse_config(tiny()), 0.0)
    other = parse_config(tiny(**{"model.hidden_dim": 64}))
    with pytest.raises(CheckpointError, match=r"different config \(model.hidden_dim: 32 -> 64"):
        ck.restore_latest(_state(0), other)
    # Logging cadence may change between attempts; it does not alter the trajectory.
    assert ck.restore_latest(_state(0), parse_config(tiny(**{"train.log_every": 7}))) is not None
    wrong_shape = _state(0)
    wrong_shape["params"]["w"] = np.zeros((5, 3), np.float32)
    with pytest.raises(CheckpointError, match="does not match this model"):
        ck.restore_latest(wrong_shape, parse_config(tiny()))


def test_failed_write_keeps_earlier_checkpoints(tmp_path: Path) -> None:
    """A write that runs out of room (RLIMIT_FSIZE: a real failing write(2)) leaves step 1 intact."""
    script = textwrap.dedent(f"""
        import resource, signal, sys
        import numpy as np
        sys.path.insert(0, {str(REPO)!r})
        from runner.checkpoint import Checkpointer
        from runner.config import parse_config
        from runner.errors import CheckpointError
        from tests.runner.conftest import tiny
        cfg = parse_config(tiny())
        ck = Checkpointer({str(tmp_path)!r}, keep=1)
        ck.save({{"w": np.zeros(10, np.float32)}}, 1, cfg, 0.0)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))
        try:
            ck.save({{"w": np.ones(100_000, np.float32)}}, 2, cfg, 0.0)
        except CheckpointError as err:
            print(err)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=sub_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    assert "cannot write checkpoint" in r.stdout and "earlier checkpoints kept (step 1)" in r.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["step_00000001.npz"]
    ck = Checkpointer(str(tmp_path), keep=1)
    assert ck.restore_latest({"w": np.zeros(10, np.float32)}, parse_config(tiny())).step == 1  # type: ignore[union-attr]
