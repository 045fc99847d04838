"""Bits per byte: the definition on a hand-computed case, and the evaluator on a model with known output."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

from runner.config import DataConfig, ModelConfig
from runner.data import ByteTokenizer, load_split
from runner.eval import EvalSums, bpb, evaluate
from runner.model import init_params


def test_bpb_hand_computed() -> None:
    # Four targets: 1 byte, 2 bytes, a special token (0 bytes), 1 byte. The special token's nats are excluded.
    nats = np.array([1.0, 2.0, 0.5, 3.0])
    target_bytes = np.array([1, 2, 0, 1])
    assert bpb(nats, target_bytes) == pytest.approx((1.0 + 2.0 + 3.0) / (math.log(2) * 4), rel=1e-15)
    assert bpb(nats, target_bytes) == pytest.approx(2.1640425613334453, rel=1e-15)
    with pytest.raises(ValueError):
        bpb(np.array([1.0]), np.array([0]))


def test_eval_sums_are_exact_float64() -> None:
    token_bytes = np.array([1, 2, 3, 0])
    s = EvalSums()
    rng = np.random.default_rng(0)
    all_nats, all_bytes = [], []
    for _ in range(50):
        targets = rng.integers(0, 4, (3, 7))
        valid = rng.random((3, 7)) < 0.9
        nats = rng.random((3, 7)).astype(np.float32) * 5
        s.add(nats, targets, valid, token_bytes)
        all_nats.append(nats[valid].astype(np.float64))
        all_bytes.append(token_bytes[targets][valid])
    res = s.result()
    assert res.bpb == pytest.approx(bpb(np.concatenate(all_nats), np.concatenate(all_bytes)), rel=1e-15)
    assert res.bytes == int(np.concatenate(all_bytes).sum())


def test_uniform_model_scores_log2_vocab() -> None:
    # All-zero weights give all-zero logits: every byte costs log2(vocab) bits exactly.
    c = ModelConfig(hidden_dim=32, intermediate_dim=64, num_layers=1, num_heads=2, num_kv_heads=2, seq_len=64,
                    vocab_size=264, compute_dtype="float32")
    params = jax.tree_util.tree_map(lambda x: x * 0, init_params(c, jax.random.key(0)))
    data = load_split(DataConfig(), "val")
    tb = np.zeros(264, np.int64)
    tb[:257] = ByteTokenizer().token_bytes()
    res = evaluate(params, c, data, tb, batch_size=16, max_tokens=5000)
    assert res.bpb == pytest.approx(math.log2(264), rel=1e-6)
    assert res.loss == pytest.approx(math.log(264), rel=1e-6)
    eos_targets = int((data.tokens[1:5001] == 256).sum())
    assert res.tokens == 5000 - eos_targets and res.bytes == res.tokens
