"""The train state and the jitted train step (with gradient accumulation), sharded over the mesh.

The state is a plain dict pytree: ``params`` (float32), ``opt_state``, ``step`` (int32) and ``key`` (the run's
PRNG key as raw uint32 key data, so it checkpoints like any array). One call of the step is one optimizer
update over ``grad_accum`` micro-batches, accumulated with ``lax.scan`` in float32.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh

from runner.config import RunConfig
from runner.model import init_params, loss_fn
from runner.parallel import batch_sharding, put_global, replicated, state_shardings

State = dict[str, Any]


def _init_fn(cfg: RunConfig, tx: optax.GradientTransformation) -> Callable[[], State]:
    init_key, run_key = jax.random.split(jax.random.key(cfg.train.seed))

    def _init() -> State:
        params = init_params(cfg.model, init_key)
        return {
            "params": params,
            "opt_state": tx.init(params),
            "step": jnp.zeros((), jnp.int32),
            "key": jax.random.key_data(run_key),
        }

    return _init


def abstract_state(cfg: RunConfig, tx: optax.GradientTransformation, mesh: Mesh) -> tuple[Any, Any]:
    """Shapes/dtypes of the state (no compute) and the sharding of every leaf."""
    abstract = jax.eval_shape(_init_fn(cfg, tx))
    return abstract, state_shardings(abstract, mesh, cfg.train.parallelism == "fsdp")


def init_state(cfg: RunConfig, tx: optax.GradientTransformation, shardings: Any) -> State:
    """A fresh state (a pure function of train.seed), created directly in its shardings."""
    return jax.jit(_init_fn(cfg, tx), out_shardings=shardings)()


def place_state(host_state: Any, shardings: Any) -> State:
    """Host arrays (e.g. from a checkpoint) onto the devices, bit for bit."""
    return jax.tree_util.tree_map(lambda a, s: put_global(np.asarray(a), s), host_state, shardings)


def build_train_step(
    cfg: RunConfig,
    tx: optax.GradientTransformation,
    lr: optax.Schedule,
    shardings: Any,
    mesh: Mesh,
) -> Callable[[State, jax.Array], tuple[State, dict[str, jax.Array]]]:
    accum = cfg.train.grad_accum
    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)

    def step_fn(state: State, batch: jax.Array) -> tuple[State, dict[str, jax.Array]]:
        params = state["params"]

        def micro(carry: tuple[Any, jax.Array], windows: jax.Array) -> tuple[tuple[Any, jax.Array], None]:
            g_acc, ce_acc = carry
            (_, ce), g = grad_fn(params, cfg.model, windows)
            return (jax.tree_util.tree_map(jnp.add, g_acc, g), ce_acc + ce), None

        zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
        (grads, ce), _ = jax.lax.scan(micro, (zeros, jnp.zeros((), jnp.float32)), batch)
        grads = jax.tree_util.tree_map(lambda g: g / accum, grads)
        updates, opt_state = tx.update(grads, state["opt_state"], params)
        new_state = {
            "params": optax.apply_updates(params, updates),
            "opt_state": opt_state,
            "step": state["step"] + 1,
            "key": state["key"],
        }
        metrics = {"loss": ce / accum, "grad_norm": optax.global_norm(grads), "lr": lr(state["step"])}
        return new_state, metrics

    metric_sh = {k: replicated(mesh) for k in ("loss", "grad_norm", "lr")}
    return jax.jit(
        step_fn,
        in_shardings=(shardings, train_batch_sharding(mesh)),
        out_shardings=(shardings, metric_sh),
        donate_argnums=0,
    )


def train_batch_sharding(mesh: Mesh) -> jax.sharding.NamedSharding:
    """(grad_accum, micro_batch, seq_len + 1), split over devices along the micro-batch axis."""
    return batch_sharding(mesh, 3, axis=1)


def put_train_batch(batch: np.ndarray, cfg: RunConfig, mesh: Mesh) -> jax.Array:
    accum = cfg.train.grad_accum
    shaped = batch.reshape(accum, batch.shape[0] // accum, batch.shape[1])
    return put_global(shaped, train_batch_sharding(mesh))
