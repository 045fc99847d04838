"""Optimizers and learning-rate schedules (optax).

- ``adamw``: AdamW on every parameter; weight decay on matrices (ndim >= 2) only, never on norm scales.
- ``muon``: Muon (Newton-Schulz orthogonalised momentum) on the 2-D *hidden* matrices (attention and MLP
  kernels), AdamW on the embedding, the untied head and every vector. The embedding and head are 2-D but are
  lookup/readout tables, not linear maps between hidden states, so Muon does not suit them (Keller Jordan's
  and modded-nanogpt's split); hence ``optax.multi_transform`` with explicit labels rather than handing every
  2-D array to ``optax.contrib.muon``.
- Schedules (all with linear warmup from ``1/warmup`` of the peak): cosine to ``min_lr_ratio``; WSD
  (warmup-stable-decay: constant, then linear decay over the last ``decay_fraction`` of steps); linear decay;
  constant. Muon's learning rate follows the same shape scaled to its own peak.
- ``ema_beta``: an exponential moving average of the weights, ``ema = beta * ema + (1 - beta) * params`` after
  every update, kept in the optimizer state (:func:`ema_of_params`), so checkpoints and resume carry it; the
  trainer evaluates with it (:func:`eval_params`). Levanter's ``ema_beta``, which Marin's configs record.
- Global-norm gradient clipping before either optimizer. Gradient accumulation lives in the train step (a
  ``lax.scan`` over micro-batches), so one optimizer update is one step and resume stays exact.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from runner.config import OptimizerConfig, ScheduleConfig

ADAM_ONLY = ("embedding", "lm_head")
_MATRIX = optax.contrib.MuonDimensionNumbers(reduction_axis=0, output_axis=1)


def lr_schedule(sched: ScheduleConfig, peak: float, steps: int) -> optax.Schedule:
    warmup = sched.warmup_steps
    floor = sched.min_lr_ratio
    decay_steps = max(1, round(sched.decay_fraction * steps))

    def schedule(step: jax.Array) -> jax.Array:
        s = jnp.asarray(step, jnp.float32)
        warm = jnp.minimum(1.0, (s + 1.0) / warmup) if warmup else 1.0
        t = jnp.clip((s - warmup) / max(1, steps - warmup), 0.0, 1.0)
        if sched.name == "cosine":
            factor = floor + (1 - floor) * 0.5 * (1 + jnp.cos(math.pi * t))
        elif sched.name == "linear":
            factor = 1 - (1 - floor) * t
        elif sched.name == "wsd":
            d = jnp.clip((s - (steps - decay_steps)) / decay_steps, 0.0, 1.0)
            factor = 1 - (1 - floor) * d
        else:
            factor = jnp.ones_like(s)
        return peak * warm * factor

    return schedule


def param_labels(params: dict) -> dict:
    """'muon' for 2-D hidden matrices, 'adamw' for the embedding, the head and all vectors."""

    def label(path: tuple, leaf: jax.Array) -> str:
        names = [getattr(p, "key", str(p)) for p in path]
        if any(n in ADAM_ONLY for n in names) or leaf.ndim != 2:
            return "adamw"
        return "muon"

    return jax.tree_util.tree_map_with_path(label, params)


def _decay_mask(params: dict) -> dict:
    return jax.tree_util.tree_map(lambda x: x.ndim >= 2, params)


def make_optimizer(
    opt: OptimizerConfig, sched: ScheduleConfig, steps: int
) -> tuple[optax.GradientTransformation, optax.Schedule]:
    """The optax transformation for a run, and its (AdamW) learning-rate schedule for logging."""
    lr = lr_schedule(sched, opt.learning_rate, steps)
    adamw = optax.adamw(lr, b1=opt.beta1, b2=opt.beta2, eps=opt.eps, weight_decay=opt.weight_decay, mask=_decay_mask)
    if opt.name == "adamw":
        inner = adamw
    else:
        m = opt.muon
        muon = optax.chain(
            optax.contrib.scale_by_muon(
                ns_steps=m.ns_steps,
                beta=m.momentum,
                nesterov=m.nesterov,
                # Explicit per-leaf dims: the default (None) cannot be mapped over multi_transform's masked tree.
                weight_dimension_numbers=lambda u: jax.tree_util.tree_map(lambda _: _MATRIX, u),
            ),
            optax.add_decayed_weights(opt.weight_decay),
            optax.scale_by_learning_rate(lr_schedule(sched, m.learning_rate, steps)),
        )
        inner = optax.multi_transform({"adamw": adamw, "muon": muon}, param_labels)
    parts = [] if opt.max_grad_norm is None else [optax.clip_by_global_norm(opt.max_grad_norm)]
    parts.append(inner)
    if opt.ema_beta is not None:
        parts.append(ema_of_params(opt.ema_beta))
    return (parts[0] if len(parts) == 1 else optax.chain(*parts)), lr


class EmaParamsState(NamedTuple):
    ema_params: Any


def ema_of_params(beta: float) -> optax.GradientTransformation:
    """Last in a chain: leaves the updates alone and averages the weights they produce.

    Starts from the initial weights (as Levanter's EMA does); after step ``t`` the average is
    ``beta**t * w0 + (1 - beta) * sum(beta**(t-k) * w_k)``.
    """

    def init(params: Any) -> EmaParamsState:
        return EmaParamsState(ema_params=jax.tree_util.tree_map(lambda p: jnp.asarray(p, jnp.float32), params))

    def update(updates: Any, state: EmaParamsState, params: Any = None) -> tuple[Any, EmaParamsState]:
        if params is None:
            raise ValueError("ema_of_params needs the params (pass them to tx.update)")
        new = optax.apply_updates(params, updates)
        ema = jax.tree_util.tree_map(lambda e, p: beta * e + (1.0 - beta) * p.astype(e.dtype), state.ema_params, new)
        return updates, EmaParamsState(ema_params=ema)

    return optax.GradientTransformation(init, update)


def eval_params(state: dict) -> Any:
    """The weights to evaluate: the EMA when the optimizer keeps one, else the live params."""
    found = optax.tree_utils.tree_get(state["opt_state"], "ema_params", default=None)
    return state["params"] if found is None else found
