"""End to end: `openlab train`, results.json, killed-and-resumed runs, data parallelism, bad input."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from runner.checkpoint import MANIFEST, Checkpointer
from runner.schema import dumps_results, load_results, loads_results
from tests.runner.conftest import OPENLAB, REPO, openlab, sub_env, tiny, write_config


def _metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def _final_leaves(out: Path, step: int) -> list[np.ndarray]:
    return Checkpointer(str(out / "checkpoints"), keep=1).arrays(step)[1]


def _published(out: Path, step: int) -> Path:
    """The manifest of checkpoint ``step``: it exists once the checkpoint is complete."""
    return out / "checkpoints" / f"step_{step:08d}" / MANIFEST


def test_train_writes_valid_results_and_round_trips(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "c.yaml", tiny(**{"train.steps": 12, "train.eval_every": 6,
                                                    "train.checkpoint_every": 6}))
    out = tmp_path / "out"
    r = openlab("train", str(cfg), "--out", str(out), WANDB_MODE="offline")
    assert r.returncode == 0, r.stderr
    res = load_results(out / "results.json")
    run_id = res.run_id
    assert res.tracking.wandb_mode == "offline" and res.tracking.wandb_run_id == run_id
    assert list((out / "wandb").glob(f"offline-run-*-{run_id}/run-{run_id}.wandb"))
    assert res.tokens == 12 * 8 * 32 and res.params > 0 and res.model_flops > 0
    assert res.hardware_flops is None and res.mfu is None and res.flops.peak_flops_per_chip is None  # CPU
    assert res.attestation is None and res.provenance.git_sha and res.provenance.git_dirty is not None
    assert 0 < res.bpb < 8.5 and 2000 < res.eval["val"].tokens <= 2048  # minus end-of-text targets
    assert loads_results(dumps_results(res)) == res
    m = _metrics(out)
    losses = [x["train/loss"] for x in m if "train/loss" in x]
    assert len(losses) == 12 and losses[-1] < losses[0]
    assert [x["step"] for x in m if "eval/val/bpb" in x] == [6, 12]
    assert all(x["throughput/tokens_per_second"] > 0 for x in m if "train/loss" in x)
    # Re-running a finished --out resumes at the end: no training, the same numbers.
    again = openlab("train", str(cfg), "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert sum(1 for x in _metrics(out) if "eval/val/bpb" in x and x["step"] == 12) == 1
    again_res = load_results(out / "results.json")
    assert again_res.bpb == res.bpb and again_res.run_id == run_id  # same run id across attempts

    # A corrupt latest checkpoint (a truncated chunk) stops the run with one line and deletes nothing.
    latest = out / "checkpoints" / "step_00000012"
    chunk = max((p for p in latest.rglob("*") if p.is_file() and "c" in p.relative_to(latest).parts),
                key=lambda p: p.stat().st_size)
    chunk.write_bytes(chunk.read_bytes()[:100])
    r = openlab("train", str(cfg), "--out", str(out))
    assert r.returncode == 2 and "step_00000012 is corrupt" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert _published(out, 6).exists() and _published(out, 12).exists() and chunk.exists()
    # A checkpoint from a different config is refused, naming the field.
    shutil.rmtree(latest)
    other = write_config(tmp_path / "d.yaml", tiny(**{"train.steps": 12, "train.checkpoint_every": 6,
                                                      "train.eval_every": 6, "train.seed": 9}))
    r = openlab("train", str(other), "--out", str(out))
    assert r.returncode == 2 and "different config (train.seed: 0 -> 9)" in r.stderr


def _start_and_signal(cfg: Path, out: Path, step: int, sig: int) -> subprocess.Popen[bytes]:
    """Start `openlab train`, wait for checkpoint ``step`` to appear, then send ``sig`` mid-run."""
    proc = subprocess.Popen([*OPENLAB, "train", str(cfg), "--out", str(out)], cwd=REPO, env=sub_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    target = _published(out, step)
    deadline = time.monotonic() + 180
    while not target.exists():
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.01)
    os.kill(proc.pid, sig)
    proc.wait(timeout=120)
    assert not (out / "results.json").exists()  # it really stopped mid-run
    return proc


def test_killed_and_resumed_run_is_bit_identical(tmp_path: Path) -> None:
    steps = 80
    cfg = write_config(tmp_path / "c.yaml", tiny(**{"train.steps": steps, "train.checkpoint_every": 10,
                                                    "train.log_every": 5, "optimizer.name": "muon"}))
    straight = tmp_path / "straight"
    r = openlab("train", str(cfg), "--out", str(straight))
    assert r.returncode == 0, r.stderr

    resumed = tmp_path / "resumed"
    killed = _start_and_signal(cfg, resumed, 20, signal.SIGKILL)
    assert killed.returncode == -signal.SIGKILL
    # SIGTERM (preemption): the run checkpoints the step it is on, says so in one line, and exits 2.
    stopped = _start_and_signal(cfg, resumed, 40, signal.SIGTERM)
    err = stopped.stderr.read().decode() if stopped.stderr else ""
    assert stopped.returncode == 2 and "stopped by signal at step" in err, err
    at = int(err.split("at step ")[1].split(";")[0])
    assert _published(resumed, at).exists() and at < steps
    r = openlab("train", str(cfg), "--out", str(resumed))
    assert r.returncode == 0, r.stderr

    a, b = _final_leaves(straight, steps), _final_leaves(resumed, steps)
    assert len(a) == len(b) and all(x.tobytes() == y.tobytes() for x, y in zip(a, b, strict=True))
    la = [(x["step"], x["train/loss"]) for x in _metrics(straight) if "train/loss" in x]
    lb = [(x["step"], x["train/loss"]) for x in _metrics(resumed) if "train/loss" in x and x["step"] % 5 == 0]
    assert la == lb  # metrics.jsonl reads as one run (plus the line of the step the SIGTERM checkpointed)
    assert load_results(straight / "results.json").bpb == load_results(resumed / "results.json").bpb


_PARALLEL = """
import json, sys
from runner.config import parse_config
from runner.train import train
from tests.runner.conftest import tiny
import jax
out = {"devices": jax.device_count()}
for mode in sys.argv[2:]:
    cfg = parse_config(tiny(**{"train.steps": 6, "train.parallelism": mode, "train.grad_accum": 2}))
    res = train(cfg, sys.argv[1] + "/" + mode, progress=False)
    losses = [json.loads(l)["train/loss"] for l in open(sys.argv[1] + "/" + mode + "/metrics.jsonl") if "train/loss" in l]
    out[mode] = {"losses": losses, "bpb": res.bpb}
print(json.dumps(out))
"""


def _parallel_run(tmp: Path, devices: int, *modes: str) -> dict:
    env = sub_env()
    if devices > 1:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    r = subprocess.run([sys.executable, "-c", _PARALLEL, str(tmp), *modes], capture_output=True, text=True,
                       env=env, cwd=REPO, timeout=240)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_four_device_data_parallel_and_fsdp_match_one_device(tmp_path: Path) -> None:
    one = _parallel_run(tmp_path / "one", 1, "data")
    four = _parallel_run(tmp_path / "four", 4, "data", "fsdp")
    assert one["devices"] == 1 and four["devices"] == 4
    for mode in ("data", "fsdp"):
        np.testing.assert_allclose(four[mode]["losses"], one["data"]["losses"], rtol=2e-5)
        assert four[mode]["bpb"] == pytest.approx(one["data"]["bpb"], rel=1e-4)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"model.seq_len": 100_000}, "seq_len: 100000 is longer than every document"),
        ({"model.vocab_size": 100}, "model.vocab_size: 100 is smaller than the tokenizer's 257 tokens"),
        ({"train.batch_size": 6, "train.grad_accum": 4}, "grad_accum: 4 does not divide batch_size 6"),
    ],
)
def test_bad_configs_fail_with_one_line(tmp_path: Path, overrides: dict, message: str) -> None:
    cfg = write_config(tmp_path / "c.yaml", tiny(**overrides))
    r = openlab("train", str(cfg), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: ") and "Traceback" not in r.stderr


def test_malformed_yaml_and_empty_dataset(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {hidden_dim: 32\ntrain: [")
    r = openlab("train", str(bad), "--out", str(tmp_path / "o1"))
    assert r.returncode == 2 and "malformed YAML at line" in r.stderr and r.stderr.count("\n") == 1
    (tmp_path / "empty.jsonl").write_text("\n")
    cfg = write_config(tmp_path / "c.yaml", tiny(**{"data.source": {"paths": [str(tmp_path / "empty.jsonl")]}}))
    r = openlab("train", str(cfg), "--out", str(tmp_path / "o2"))
    assert r.returncode == 2 and "split 'train' has no documents" in r.stderr and r.stderr.count("\n") == 1


@pytest.mark.slow
def test_tiny_cpu_speedrun_config_learns(tmp_path: Path) -> None:
    """The real reference config, unmodified: about a minute on 2 cores, val BPB far below uniform (8.04)."""
    cfg = REPO / "experiments" / "speedrun" / "tiny_cpu" / "config.yaml"
    r = openlab("train", str(cfg), "--out", str(tmp_path / "out"), timeout=400)
    assert r.returncode == 0, r.stderr
    res = load_results(tmp_path / "out" / "results.json")
    assert res.name == "tiny_cpu" and res.bpb < 3.0
