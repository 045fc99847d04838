"""The model (param count, causality, z-loss, dtypes) and the optimizer split and schedules."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from runner.config import ModelConfig, OptimizerConfig, ScheduleConfig
from runner.flops import param_count
from runner.model import Transformer, count_params, init_params, loss_fn
from runner.optim import lr_schedule, make_optimizer, param_labels


def cfg(**kw: object) -> ModelConfig:
    base = dict(hidden_dim=64, intermediate_dim=128, num_layers=2, num_heads=4, num_kv_heads=2, seq_len=16,
                vocab_size=264)
    base.update(kw)
    return ModelConfig(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("tie", [True, False])
@pytest.mark.parametrize("kv", [1, 2, 4])
def test_param_count_matches_flops_formula(tie: bool, kv: int) -> None:
    c = cfg(tie_embeddings=tie, num_kv_heads=kv)
    params = jax.eval_shape(lambda: init_params(c, jax.random.key(0)))
    assert count_params(params) == param_count(c)
    assert all(x.dtype == jnp.float32 for x in jax.tree_util.tree_leaves(params))


def test_attention_is_causal_and_logits_float32() -> None:
    c = cfg()
    params = init_params(c, jax.random.key(1))
    ids = jax.random.randint(jax.random.key(2), (1, 16), 0, 257)
    changed = ids.at[0, 10].set((ids[0, 10] + 1) % 257)
    f = jax.jit(lambda i: Transformer(c).apply({"params": params}, i))
    a, b = f(ids), f(changed)
    assert a.dtype == jnp.float32
    np.testing.assert_array_equal(a[0, :10], b[0, :10])
    assert not np.allclose(a[0, 10:], b[0, 10:])


def test_z_loss_adds_to_loss_not_to_cross_entropy() -> None:
    w = jax.random.randint(jax.random.key(3), (2, 17), 0, 257)
    params = init_params(cfg(), jax.random.key(0))
    f = jax.jit(loss_fn, static_argnums=1)
    loss0, ce0 = f(params, cfg(), w)
    loss1, ce1 = f(params, cfg(z_loss=1e-2), w)
    assert float(ce0) == pytest.approx(float(ce1)) and float(loss0) == pytest.approx(float(ce0))
    assert float(loss1) > float(loss0)


def test_muon_gets_only_hidden_matrices() -> None:
    params = init_params(cfg(tie_embeddings=False), jax.random.key(0))
    labels = param_labels(params)
    assert labels["embedding"] == "adamw" and labels["lm_head"] == "adamw"
    assert labels["final_norm"]["scale"] == "adamw"
    assert labels["layer_0"]["attn_norm"]["scale"] == "adamw"
    for name in ("q", "k", "v", "o"):
        assert labels["layer_1"]["attn"][name]["kernel"] == "muon"
    for name in ("gate", "up", "down"):
        assert labels["layer_0"]["mlp"][name]["kernel"] == "muon"


@pytest.mark.parametrize("name", ["adamw", "muon"])
def test_optimizers_reduce_loss(name: str) -> None:
    c = cfg(num_layers=1, hidden_dim=32, intermediate_dim=64)
    params = init_params(c, jax.random.key(0))
    tx, _ = make_optimizer(OptimizerConfig(name=name, learning_rate=1e-2), ScheduleConfig(name="constant"), 20)
    state = tx.init(params)
    w = jax.random.randint(jax.random.key(4), (4, 17), 0, 20)

    @jax.jit
    def step(p, s):  # type: ignore[no-untyped-def]
        (loss, _), g = jax.value_and_grad(loss_fn, has_aux=True)(p, c, w)
        u, s = tx.update(g, s, p)
        return jax.tree_util.tree_map(jnp.add, p, u), s, loss

    losses = []
    for _ in range(15):
        params, state, loss = step(params, state)
        losses.append(float(loss))
    assert losses[-1] < losses[0] - 1.0


def test_schedules() -> None:
    steps = 100
    cos = lr_schedule(ScheduleConfig(name="cosine", warmup_steps=10, min_lr_ratio=0.1), 1.0, steps)
    assert float(cos(0)) == pytest.approx(0.1) and float(cos(9)) == pytest.approx(1.0)
    assert float(cos(55)) == pytest.approx(0.55, abs=1e-6) and float(cos(100)) == pytest.approx(0.1)
    wsd = lr_schedule(ScheduleConfig(name="wsd", warmup_steps=0, decay_fraction=0.2, min_lr_ratio=0.0), 2.0, steps)
    assert float(wsd(0)) == 2.0 and float(wsd(80)) == 2.0 and float(wsd(90)) == pytest.approx(1.0)
    lin = lr_schedule(ScheduleConfig(name="linear", min_lr_ratio=0.0), 1.0, steps)
    assert float(lin(50)) == pytest.approx(0.5)
    const = lr_schedule(ScheduleConfig(name="constant", warmup_steps=4), 1.0, steps)
    assert float(const(1)) == pytest.approx(0.5) and float(const(60)) == 1.0
