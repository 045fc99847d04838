"""A Llama-style decoder in flax, in one readable file (nanoGPT-style).

RMSNorm -> grouped-query attention with RoPE -> residual -> RMSNorm -> SwiGLU MLP -> residual, ``num_layers``
times, then a final RMSNorm and a head that is tied to the embedding or not. Parameters are float32 (the master
copy the optimizer updates); matmuls run in ``compute_dtype`` (bfloat16 by default) and the logits, softmax and
norms in float32. Attention goes through ``jax.nn.dot_product_attention`` so XLA picks cuDNN flash attention
on GPU. No biases, so the parameter count is exactly ``runner.flops.param_count``.
"""

from __future__ import annotations

import math

import flax.linen as nn
import jax
import jax.numpy as jnp

from runner.config import ModelConfig

Params = dict


class Linear(nn.Module):
    """y = x @ W without bias; W is float32 and cast to the compute dtype for the matmul."""

    features: int
    dtype: jnp.dtype
    std: float

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        w = self.param("kernel", nn.initializers.normal(self.std), (x.shape[-1], self.features), jnp.float32)
        return jnp.einsum("...i,io->...o", x.astype(self.dtype), w.astype(self.dtype))


class RMSNorm(nn.Module):
    eps: float

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        scale = self.param("scale", nn.initializers.ones, (x.shape[-1],), jnp.float32)
        x32 = x.astype(jnp.float32)
        y = x32 * jax.lax.rsqrt(jnp.mean(jnp.square(x32), axis=-1, keepdims=True) + self.eps)
        return (y * scale).astype(x.dtype)


def rope(x: jax.Array, theta: float) -> jax.Array:
    """Rotary position embedding over (batch, seq, heads, head_dim), rotate-half convention (Llama)."""
    t, hd = x.shape[1], x.shape[-1]
    inv_freq = 1.0 / (theta ** (jnp.arange(0, hd, 2, dtype=jnp.float32) / hd))
    angles = jnp.arange(t, dtype=jnp.float32)[:, None] * inv_freq[None, :]
    cos, sin = jnp.cos(angles)[None, :, None, :], jnp.sin(angles)[None, :, None, :]
    x1, x2 = jnp.split(x.astype(jnp.float32), 2, axis=-1)
    out = jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
    return out.astype(x.dtype)


class Attention(nn.Module):
    cfg: ModelConfig

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        c = self.cfg
        b, t, _ = x.shape
        dt = jnp.dtype(c.compute_dtype)
        out_std = c.init_std / math.sqrt(2 * c.num_layers)
        q = Linear(c.num_heads * c.head_dim, dt, c.init_std, name="q")(x).reshape(b, t, c.num_heads, c.head_dim)
        k = Linear(c.num_kv_heads * c.head_dim, dt, c.init_std, name="k")(x)
        v = Linear(c.num_kv_heads * c.head_dim, dt, c.init_std, name="v")(x)
        k = k.reshape(b, t, c.num_kv_heads, c.head_dim)
        v = v.reshape(b, t, c.num_kv_heads, c.head_dim)
        q, k = rope(q, c.rope_theta), rope(k, c.rope_theta)
        y = jax.nn.dot_product_attention(q, k, v, is_causal=True)  # GQA: kv heads are shared natively
        return Linear(c.hidden_dim, dt, out_std, name="o")(y.reshape(b, t, c.num_heads * c.head_dim))


class SwiGLU(nn.Module):
    cfg: ModelConfig

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        c = self.cfg
        dt = jnp.dtype(c.compute_dtype)
        gate = Linear(c.intermediate_dim, dt, c.init_std, name="gate")(x)
        up = Linear(c.intermediate_dim, dt, c.init_std, name="up")(x)
        return Linear(c.hidden_dim, dt, c.init_std / math.sqrt(2 * c.num_layers), name="down")(
            jax.nn.silu(gate) * up
        )


class Block(nn.Module):
    cfg: ModelConfig

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = x + Attention(self.cfg, name="attn")(RMSNorm(self.cfg.norm_eps, name="attn_norm")(x))
        return x + SwiGLU(self.cfg, name="mlp")(RMSNorm(self.cfg.norm_eps, name="mlp_norm")(x))


class Transformer(nn.Module):
    """ids (batch, seq) int32 -> logits (batch, seq, vocab) float32."""

    cfg: ModelConfig

    @nn.compact
    def __call__(self, ids: jax.Array) -> jax.Array:
        c = self.cfg
        dt = jnp.dtype(c.compute_dtype)
        embed = self.param("embedding", nn.initializers.normal(c.init_std), (c.vocab_size, c.hidden_dim))
        x = jnp.take(embed, ids, axis=0).astype(dt)
        block = nn.remat(Block) if c.remat else Block
        for i in range(c.num_layers):
            x = block(c, name=f"layer_{i}")(x)
        x = RMSNorm(c.norm_eps, name="final_norm")(x)
        if c.tie_embeddings:
            head = embed.T
        else:
            head = self.param("lm_head", nn.initializers.normal(c.init_std), (c.hidden_dim, c.vocab_size))
        return jnp.einsum("btd,dv->btv", x, head.astype(dt), preferred_element_type=jnp.float32)


def init_params(cfg: ModelConfig, key: jax.Array) -> Params:
    dummy = jnp.zeros((1, min(cfg.seq_len, 8)), dtype=jnp.int32)
    return Transformer(cfg).init(key, dummy)["params"]


def token_nats(params: Params, cfg: ModelConfig, windows: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Per-target-token cross-entropy in nats and log-partition, both (batch, seq) float32.

    ``windows`` is (batch, seq_len + 1): inputs are ``windows[:, :-1]``, targets ``windows[:, 1:]``.
    """
    logits = Transformer(cfg).apply({"params": params}, windows[:, :-1])
    log_z = jax.nn.logsumexp(logits, axis=-1)
    target_logit = jnp.take_along_axis(logits, windows[:, 1:, None], axis=-1)[..., 0]
    return log_z - target_logit, log_z


def loss_fn(params: Params, cfg: ModelConfig, windows: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Mean next-token loss (plus z-loss when configured) and the plain cross-entropy for logging."""
    nats, log_z = token_nats(params, cfg, windows)
    ce = jnp.mean(nats)
    loss = ce + cfg.z_loss * jnp.mean(jnp.square(log_z)) if cfg.z_loss else ce
    return loss, ce


def count_params(params: Params) -> int:
    return int(sum(x.size for x in jax.tree_util.tree_leaves(params)))
