"""Realistic, valid results for leaderboard tests and the benchmark, built through runner.schema."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from runner import attest
from runner.config import Author, RunConfig
from runner.schema import Attestation, EvalSetResult, FlopsDetail, Provenance, Results, Tracking

SHA = "0123456789abcdef0123456789abcdef01234567"
AUTHORS = [
    Author(name="Ada Lovelace", affiliation="Analytical Engines", url="https://example.org/ada"),
    Author(name="Grace Hopper", affiliation="Navy Labs"),
    Author(name="Alan Turing", affiliation=None),
]


def make_results(
    i: int,
    *,
    bpb: float | None = None,
    model_flops: float | None = None,
    hardware_flops: float | None = -1.0,
    name: str | None = None,
    description: str = "",
    run_id: str | None = None,
    seed: int = 0,
    attested: bool = False,
) -> Results:
    """Run number ``i``: a small Llama config whose FLOPs/BPB vary with ``i`` (deterministic per seed)."""
    rng = random.Random(seed * 1_000_003 + i)
    hidden = 64 * (1 + i % 8)
    layers = 2 + i % 6
    steps = 100 + 37 * (i % 50)
    cfg = RunConfig.model_validate(
        {
            "name": f"run-{i}",
            "model": {
                "hidden_dim": hidden,
                "intermediate_dim": hidden * 4,
                "num_layers": layers,
                "num_heads": 4,
                "num_kv_heads": 2,
                "seq_len": 128,
                "vocab_size": 256,
            },
            "train": {"batch_size": 8, "steps": steps},
        }
    )
    tokens = cfg.tokens
    per_token = 2.0 * 12 * layers * hidden * hidden
    mf = model_flops if model_flops is not None else 3 * per_token * tokens * rng.uniform(0.5, 2.0)
    hw = mf * rng.uniform(2.0, 8.0) if hardware_flops == -1.0 else hardware_flops
    value = bpb if bpb is not None else max(0.5, 4.0 - 0.1 * (mf ** 0.08) + rng.uniform(-0.15, 0.15))
    started = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=i)
    finished = started + timedelta(seconds=60 + i % 600)
    rid = run_id or f"run-{seed}-{i:05d}"
    att = None
    if attested:
        att = Attestation(
            run_id=rid,
            sha=SHA,
            config_fingerprint=cfg.fingerprint(),
            scheduler_started_at=started,
            scheduler_finished_at=finished,
            signer="0" * 16,
        )
    return Results(
        run_id=rid,
        name=name or f"Run {i}",
        track="default",
        bpb=round(value, 4),
        model_flops=mf,
        hardware_flops=hw,
        params=12 * layers * hidden * hidden + 2 * 256 * hidden,
        tokens=tokens,
        training_seconds=float((finished - started).seconds),
        mfu=(mf / hw) if hw else None,
        author=AUTHORS[i % len(AUTHORS)],
        description=description or f"Baseline variant {i}.",
        config=cfg,
        flops=FlopsDetail(
            formula="levanter-v1",
            model_flops_per_token=per_token,
            device_kind="cpu",
            chips=1,
            peak_flops_per_chip=None,
        ),
        eval={"val": EvalSetResult(bpb=round(value, 4), loss=value * 0.69, bytes=100_000, tokens=100_000)},
        tracking=Tracking(
            wandb_mode="online",
            wandb_run_id=rid,
            wandb_url=f"https://wandb.ai/openlab/speedrun/runs/{rid}",
        ),
        provenance=Provenance(
            git_sha=SHA,
            git_dirty=False,
            git_remote="https://github.com/openlab/lab.git",
            config_fingerprint=cfg.fingerprint(),
            data_fingerprint="d" * 64,
            versions={"jax": "0.4.35"},
            devices=["cpu:0"],
            host="runner-1",
            argv=["openlab", "train"],
            started_at=started,
            finished_at=finished,
            pr=100 + i % 7,
            issue=10 + i % 5,
        ),
        attestation=att,
    )


def signed(results: Results, private_pem: bytes) -> Results:
    return attest.sign(results, private_pem)
