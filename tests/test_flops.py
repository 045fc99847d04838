"""FLOPs accounting against a published Marin speedrun (reference/marin.md §2.5)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from runner.cli import main
from runner.config import ModelConfig, parse_config
from runner.flops import estimate, hardware_flops, lm_flops_per_token, param_count, peak_flops_per_chip

# experiments/speedrun/adamw_llama_scaling/130m/speedrun_results.json in marin-community/marin.
MARIN_130M = ModelConfig(
    hidden_dim=512,
    intermediate_dim=1792,
    num_layers=6,
    num_heads=8,
    num_kv_heads=8,
    seq_len=4096,
    vocab_size=128256,  # the llama3 tokenizer, as Marin always counts
    tie_embeddings=False,
)


def test_marin_130m_params_and_model_flops() -> None:
    assert param_count(MARIN_130M) == 154_147_328  # published model_size
    tokens = 128 * 4959 * 4096
    assert tokens == 2_599_944_192  # published total_tokens
    model_flops = 3 * lm_flops_per_token(MARIN_130M) * tokens
    assert model_flops == pytest.approx(1.777337490915459e18, rel=1e-12)


def test_gpt2_small_forward_flops_matches_reference() -> None:
    gpt2 = ModelConfig(
        hidden_dim=768,
        intermediate_dim=2048,
        num_layers=12,
        num_heads=12,
        num_kv_heads=12,
        seq_len=1024,
        vocab_size=50257,
    )
    # Not GPT-2's 4x MLP: a SwiGLU of 2048 has the same 3*d*f = 4.7M weights per layer as GELU 3072 x 2.
    assert lm_flops_per_token(gpt2) > 2.5e8


def test_peaks_known_and_unknown() -> None:
    assert peak_flops_per_chip("NVIDIA H100 80GB HBM3") == 989e12
    assert peak_flops_per_chip("NVIDIA H200") == 989e12
    assert peak_flops_per_chip("NVIDIA H100 PCIe") == 756e12
    assert peak_flops_per_chip("TPU v4") == 275e12
    assert peak_flops_per_chip("TPU v5 lite") == 197e12
    assert peak_flops_per_chip("TPU v5p") == 459e12
    assert peak_flops_per_chip("TPU v6 lite") == 918e12
    assert peak_flops_per_chip("cpu") is None
    assert hardware_flops(10.0, 1, None) is None
    assert hardware_flops(10.0, 8, 989e12) == pytest.approx(10 * 8 * 989e12)


def test_flops_cli_prints_json(tmp_path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "model: {hidden_dim: 512, intermediate_dim: 1792, num_layers: 6, num_heads: 8, num_kv_heads: 8,"
        " seq_len: 4096, vocab_size: 128256, tie_embeddings: false}\n"
        "train: {batch_size: 128, steps: 4959}\n"
    )
    out = CliRunner().invoke(main, ["flops", str(cfg)])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["params"] == 154_147_328
    assert data["model_flops"] == pytest.approx(1.777337490915459e18, rel=1e-12)
    assert data["model_flops_per_token"] == pytest.approx(lm_flops_per_token(MARIN_130M))
    assert data["formula"] == "levanter-v1"


def test_estimate_uses_config_tokens() -> None:
    cfg = parse_config({"model": MARIN_130M.model_dump(), "train": {"batch_size": 2, "steps": 3}})
    est = estimate(cfg)
    assert est.tokens == 2 * 3 * 4096
