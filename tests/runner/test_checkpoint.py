"""Checkpoints: exact round trip, keep-last-N, corrupt/mismatched/half-written checkpoints, a failed write
losing nothing, and sharded (DP/FSDP on 4 CPU devices) state written per shard."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from runner.checkpoint import MANIFEST, Checkpointer
from runner.config import parse_config
from runner.errors import CheckpointError
from tests.runner.conftest import REPO, sub_env, tiny


def _state(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "params": {"w": rng.standard_normal((4, 3)).astype(np.float32), "b": rng.standard_normal(3).astype(np.float32)},
        "step": np.int32(seed),
        "key": np.array([1, seed], np.uint32),
        "mu": np.zeros((2, 2), np.float32),  # all-zero chunks must be stored, or a read would find them missing
    }


def _chunk_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and "c" in p.relative_to(folder).parts)


def test_round_trip_is_bit_exact_and_keeps_last_n(tmp_path: Path) -> None:
    cfg = parse_config(tiny())
    ck = Checkpointer(str(tmp_path), keep=2)
    for step in (1, 2, 3):
        ck.save(_state(step), step, cfg, training_seconds=step * 1.5)
    assert ck.steps() == [2, 3]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_00000002", "step_00000003"]
    r = ck.restore_latest(_state(0), cfg)
    assert r is not None and r.step == 3 and r.training_seconds == 4.5 and r.path.endswith("step_00000003")
    want = _state(3)
    for k in ("w", "b"):
        assert r.state["params"][k].tobytes() == want["params"][k].tobytes()
    assert np.array_equal(r.state["key"], want["key"]) and r.state["key"].dtype == np.uint32
    assert r.state["step"] == 3 and r.state["step"].dtype == np.int32 and not r.state["mu"].any()
    # One zarr3 array per leaf, each chunk checksummed; the manifest names the write folder.
    manifest = json.loads((tmp_path / "step_00000003" / MANIFEST).read_text())
    arrays = tmp_path / "step_00000003" / manifest["write_id"]
    assert len(list(arrays.iterdir())) == len(manifest["leaves"]) == 5
    meta = json.loads((arrays / "leaf_00000" / "zarr.json").read_text())
    assert [c["name"] for c in meta["codecs"]] == ["bytes", "crc32c"]


def test_keep_one_never_deletes_the_newest(tmp_path: Path) -> None:
    cfg = parse_config(tiny())
    ck = Checkpointer(str(tmp_path), keep=1)
    for step in (5, 6):
        ck.save(_state(step), step, cfg, 0.0)
        assert ck.steps() == [step]
    ck.save(_state(7), 6, cfg, 0.0)  # the same step saved again replaces it whole
    assert ck.steps() == [6] and ck.restore_latest(_state(0), cfg).state["step"] == 7  # type: ignore[union-attr]
    assert len([p for p in (tmp_path / "step_00000006").iterdir() if p.is_dir()]) == 1


def test_half_written_checkpoint_is_invisible_and_cleaned_up(tmp_path: Path) -> None:
    """A writer killed before its manifest leaves a folder that is not a checkpoint; the next save removes it."""
    cfg = parse_config(tiny())
    ck = Checkpointer(str(tmp_path), keep=3)
    ck.save(_state(1), 1, cfg, 0.0)
    ck.save(_state(2), 2, cfg, 0.0)
    (tmp_path / "step_00000002" / MANIFEST).unlink()  # as if killed just before publishing
    assert ck.steps() == [1]
    assert ck.restore_latest(_state(0), cfg).step == 1  # type: ignore[union-attr]
    ck.save(_state(3), 3, cfg, 0.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_00000001", "step_00000003"]


def test_corrupt_checkpoint_is_a_clear_error(tmp_path: Path) -> None:
    cfg = parse_config(tiny())
    ck = Checkpointer(str(tmp_path), keep=3)
    ck.save(_state(1), 1, cfg, 0.0)
    ck.save(_state(2), 2, cfg, 0.0)
    folder = Path(ck.path(2))
    chunk = _chunk_files(folder)[0]
    original = chunk.read_bytes()
    flipped = bytearray(original)
    flipped[2] ^= 0xFF  # one bit pattern inside the array data: only the crc32c can tell
    chunk.write_bytes(bytes(flipped))
    with pytest.raises(CheckpointError, match=r"step_00000002 is corrupt \(.*[Dd]igest mismatch"):
        ck.restore_latest(_state(0), cfg)
    chunk.unlink()  # a lost chunk is an error, never silent zeros
    with pytest.raises(CheckpointError, match=r"step_00000002 is corrupt \(.*missing"):
        ck.restore_latest(_state(0), cfg)
    chunk.write_bytes(original)
    assert ck.restore_latest(_state(0), cfg).step == 2  # type: ignore[union-attr]
    (folder / MANIFEST).write_text('{"format": 2, "step":')
    with pytest.raises(CheckpointError, match=r"step_00000002 is corrupt \(manifest"):
        ck.restore_latest(_state(0), cfg)
    assert ck.steps() == [1, 2] and ck.restore(1, _state(0), cfg).step == 1


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
    assert "cannot write checkpoint" in r.stdout and "disk full; earlier checkpoints kept (step 1)" in r.stdout
    assert r.stdout.count("\n") == 1, r.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["step_00000001"]
    ck = Checkpointer(str(tmp_path), keep=1)
    assert ck.restore_latest({"w": np.zeros(10, np.float32)}, parse_config(tiny())).step == 1  # type: ignore[union-attr]


_SHARDED = """
import json, sys
import jax, numpy as np
from runner.checkpoint import Checkpointer
from runner.config import parse_config
from runner.optim import make_optimizer
from runner.parallel import make_mesh
from runner.trainstep import abstract_state, init_state, place_state
from tests.runner.conftest import tiny

out = {}
for mode in ("data", "fsdp"):
    cfg = parse_config(tiny(**{"train.parallelism": mode}))
    tx, _ = make_optimizer(cfg.optimizer, cfg.schedule, cfg.train.steps)
    abstract, shardings = abstract_state(cfg, tx, make_mesh())
    state = init_state(cfg, tx, shardings)
    ck = Checkpointer(sys.argv[1] + "/" + mode, keep=1)
    ck.save(state, 3, cfg, 1.0)
    back = place_state(ck.restore_latest(abstract, cfg).state, shardings)
    same = all(np.asarray(a).tobytes() == np.asarray(b).tobytes()
               for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(back), strict=True))
    emb = next(l for l in ck.arrays(3)[0].leaves if l.path == "['params']['embedding']")
    out[mode] = {"same": same, "embed": [emb.shape, emb.chunks]}
    np.savez(sys.argv[1] + "/" + mode + ".npz", *[np.asarray(x) for x in jax.tree.leaves(state)])
print(json.dumps(out))
"""


def test_sharded_state_on_four_devices_is_written_per_shard(tmp_path: Path) -> None:
    """FSDP shards go to one chunk each (every shard written by its holder, no gather); data-parallel
    (replicated) leaves to a single chunk. Both restore bit for bit, on 4 devices and on 1."""
    env = sub_env(XLA_FLAGS="--xla_force_host_platform_device_count=4")
    r = subprocess.run([sys.executable, "-c", _SHARDED, str(tmp_path)], capture_output=True, text=True, env=env,
                       cwd=REPO, timeout=240)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    vocab, hidden = tiny()["model"]["vocab_size"], tiny()["model"]["hidden_dim"]
    assert res["data"] == {"same": True, "embed": [[vocab, hidden], [vocab, hidden]]}
    assert res["fsdp"] == {"same": True, "embed": [[vocab, hidden], [vocab // 4, hidden]]}
    manifest = json.loads((tmp_path / "fsdp" / "step_00000003" / MANIFEST).read_text())
    embed = next(i for i, leaf in enumerate(manifest["leaves"]) if leaf["path"] == "['params']['embedding']")
    folder = tmp_path / "fsdp" / "step_00000003" / manifest["write_id"] / f"leaf_{embed:05d}"
    assert len(_chunk_files(folder)) == 4
    for mode in ("data", "fsdp"):  # this process has one device: the sharded checkpoint reads back whole
        _, arrays = Checkpointer(str(tmp_path / mode), keep=1).arrays(3)
        with np.load(tmp_path / f"{mode}.npz") as z:
            want = [z[f"arr_{i}"] for i in range(len(z.files))]
        assert [a.tobytes() for a in arrays] == [w.tobytes() for w in want]


_MULTIHOST = """
import json, resource, signal, sys
import jax, numpy as np
out, pid, port = sys.argv[1], int(sys.argv[2]), sys.argv[3]
jax.distributed.initialize(coordinator_address="127.0.0.1:" + port, num_processes=2, process_id=pid)
from runner.checkpoint import Checkpointer
from runner.config import parse_config
from runner.errors import CheckpointError
from runner.optim import make_optimizer
from runner.parallel import make_mesh
from runner.trainstep import abstract_state, init_state, place_state
from tests.runner.conftest import tiny
cfg = parse_config(tiny(**{"train.parallelism": "fsdp"}))
tx, _ = make_optimizer(cfg.optimizer, cfg.schedule, cfg.train.steps)
abstract, shardings = abstract_state(cfg, tx, make_mesh())
state = init_state(cfg, tx, shardings)
ck = Checkpointer(out, keep=2)
ck.save(state, 3, cfg, 1.0)
back = place_state(ck.restore_latest(abstract, cfg).state, shardings)
same = all(np.asarray(a.data).tobytes() == np.asarray(b.data).tobytes()
           for x, y in zip(jax.tree.leaves(state), jax.tree.leaves(back), strict=True)
           for a, b in zip(x.addressable_shards, y.addressable_shards, strict=True))
if pid == 1:  # only this host's disk fills up: both hosts must fail the save, and nothing is published
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4000, 4000))
try:
    ck.save(state, 4, cfg, 2.0)
    failed = ""
except CheckpointError as err:
    failed = str(err)
print(json.dumps({"pid": pid, "devices": jax.device_count(), "same": same, "failed": failed}))
"""


def test_two_processes_write_their_own_shards(tmp_path: Path) -> None:
    """Two JAX processes (2 CPU devices each, FSDP over 4): each writes the shards it holds, restores them bit
    for bit, and a write failing on one host fails the save on both with no checkpoint published."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    env = sub_env(XLA_FLAGS="--xla_force_host_platform_device_count=2")
    procs = [subprocess.Popen([sys.executable, "-c", _MULTIHOST, str(tmp_path), str(pid), port], env=env, cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for pid in (0, 1)]
    results = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=240)
        assert p.returncode == 0, stderr
        results.append(json.loads(stdout.strip().splitlines()[-1]))
    assert [(r["pid"], r["devices"], r["same"]) for r in results] == [(0, 4, True), (1, 4, True)]
    assert "disk full; earlier checkpoints kept (step 3)" in results[1]["failed"]
    assert "another process failed to write its part; earlier checkpoints kept (step 3)" in results[0]["failed"]
    assert [p.name for p in tmp_path.iterdir()] == ["step_00000003"]
    manifest = json.loads((tmp_path / "step_00000003" / MANIFEST).read_text())
    embed = next(i for i, leaf in enumerate(manifest["leaves"]) if leaf["path"] == "['params']['embedding']")
    # Process 0 holds only two of the four shards: the other two chunks exist because process 1 wrote them.
    assert len(_chunk_files(tmp_path / "step_00000003" / manifest["write_id"] / f"leaf_{embed:05d}")) == 4
    assert manifest["processes"] == 2
