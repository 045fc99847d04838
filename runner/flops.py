"""FLOPs accounting: parameters, forward FLOPs per token, and device peaks.

The forward formula is Levanter's ``lm_flops_per_token`` (what Marin's speedrun scores with), versioned as
``FLOPS_FORMULA`` so results computed under a later formula can be told apart. Training FLOPs are
``3 x forward x tokens`` (forward + backward). Hardware FLOPs are ``seconds x chips x peak``; where the
peak of a device is unknown (CPUs) they are ``None``, never a made-up number.
"""

from __future__ import annotations

from pydantic import BaseModel

from runner.config import ModelConfig, RunConfig

FLOPS_FORMULA = "levanter-v1"

# Dense bf16 peak FLOP/s per chip (= per JAX device), keyed by a lowercase substring of
# `jax.devices()[0].device_kind`. Order matters: the first match wins, so specific names come first.
PEAK_BF16_FLOPS: list[tuple[str, float]] = [
    ("h100 pcie", 756e12),
    ("h100", 989e12),
    ("h200", 989e12),
    ("b200", 2250e12),
    ("b100", 1750e12),
    ("a100", 312e12),
    ("l4", 121e12),
    ("a10", 125e12),
    ("tpu v6", 918e12),  # "TPU v6 lite" (v6e)
    ("tpu v5p", 459e12),
    ("tpu v5 lite", 197e12),  # v5e
    ("tpu v5e", 197e12),
    ("tpu v5", 459e12),
    ("tpu v4", 275e12),
    ("tpu v3", 123e12),
]


def peak_flops_per_chip(device_kind: str) -> float | None:
    kind = device_kind.lower()
    for key, peak in PEAK_BF16_FLOPS:
        if key in kind:
            return peak
    return None


def param_count(m: ModelConfig) -> int:
    """Trainable parameters, embeddings and head included (Marin's `model_size`)."""
    d, f, hd = m.hidden_dim, m.intermediate_dim, m.head_dim
    attn = d * (m.num_heads * hd) + 2 * d * (m.num_kv_heads * hd) + (m.num_heads * hd) * d
    mlp = 3 * d * f
    norms = 2 * d
    embed = m.vocab_size * d
    head = 0 if m.tie_embeddings else m.vocab_size * d
    return embed + head + m.num_layers * (attn + mlp + norms) + d


def lm_flops_per_token(m: ModelConfig) -> float:
    """Forward FLOPs per token, Levanter's formula (full non-causal attention, SwiGLU, untied head)."""
    d, f, hd, t = m.hidden_dim, m.intermediate_dim, m.head_dim, m.seq_len
    mlp = 2 * 3 * d * f
    qkv = 2 * d * (m.num_heads * hd + 2 * m.num_kv_heads * hd)
    proj = 2 * d * d
    attn = (2 * t * t * m.num_heads * hd + 3 * t * t * m.num_heads + 2 * t * t * hd * m.num_heads) / t
    head = 2 * d * m.vocab_size
    return float(m.num_layers * (mlp + qkv + proj + attn) + head)


class FlopsEstimate(BaseModel):
    """What `openlab flops CONFIG` prints."""

    formula: str = FLOPS_FORMULA
    params: int
    model_flops_per_token: float
    tokens: int
    model_flops: float


def estimate(cfg: RunConfig) -> FlopsEstimate:
    fwd = lm_flops_per_token(cfg.model)
    return FlopsEstimate(
        params=param_count(cfg.model),
        model_flops_per_token=fwd,
        tokens=cfg.tokens,
        model_flops=3.0 * fwd * cfg.tokens,
    )


def hardware_flops(training_seconds: float, chips: int, peak: float | None) -> float | None:
    return None if peak is None else training_seconds * chips * peak
