"""Attestations: a signature verifies only over exactly the signed results and only with the lab's key."""

from __future__ import annotations

from datetime import UTC, datetime

from runner.attest import generate_keypair, sign, verify
from runner.config import parse_config
from runner.schema import (
    Attestation,
    EvalSetResult,
    FlopsDetail,
    Provenance,
    Results,
    Tracking,
    dumps_results,
    loads_results,
)

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def make_results() -> Results:
    cfg = parse_config(
        {
            "model": {
                "hidden_dim": 64,
                "intermediate_dim": 128,
                "num_layers": 2,
                "num_heads": 4,
                "num_kv_heads": 2,
                "seq_len": 32,
                "vocab_size": 260,
            },
            "train": {"batch_size": 4, "steps": 10},
        }
    )
    return Results(
        run_id="r1",
        name="tiny",
        track="cpu",
        bpb=2.5,
        model_flops=1e12,
        params=1000,
        tokens=1280,
        training_seconds=3.0,
        config=cfg,
        flops=FlopsDetail(formula="levanter-v1", model_flops_per_token=1e6, device_kind="cpu", chips=1),
        eval={"val": EvalSetResult(bpb=2.5, loss=1.7, bytes=1000, tokens=1000)},
        tracking=Tracking(wandb_mode="disabled"),
        provenance=Provenance(
            config_fingerprint=cfg.fingerprint(), data_fingerprint="d", started_at=NOW, finished_at=NOW
        ),
        attestation=Attestation(
            run_id="r1",
            sha="a" * 40,
            config_fingerprint=cfg.fingerprint(),
            scheduler_started_at=NOW,
            scheduler_finished_at=NOW,
            signer="",
        ),
    )


def test_sign_verify_round_trip_and_tamper() -> None:
    priv, pub = generate_keypair()
    signed = sign(make_results(), priv)
    assert verify(signed, pub)
    assert verify(loads_results(dumps_results(signed)), pub)  # survives the JSON round trip
    assert not verify(signed.model_copy(update={"bpb": 2.4}), pub)  # a better score is not the signed one
    _, other_pub = generate_keypair()
    assert not verify(signed, other_pub)
    assert not verify(make_results(), pub)  # unsigned


def test_self_reported_has_no_attestation() -> None:
    _, pub = generate_keypair()
    assert not verify(make_results().model_copy(update={"attestation": None}), pub)
