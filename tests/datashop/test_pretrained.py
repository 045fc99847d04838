"""GGUF weights in our model: parity with Hugging Face transformers, training from them, the CLI, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from runner.config import ModelConfig, parse_config
from runner.errors import ConfigError
from runner.model import Transformer
from runner.pretrained import Pretrained, default_gguf_path, load_gguf, params_for

TEXTS = [
    "The capital of France is Paris. It is known for the Eiffel Tower.",
    "def add(a, b):\n    return a + b  # sum of 12 and 34",
]


@pytest.mark.slow
def test_parity_with_transformers(smol: Pretrained) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    path = default_gguf_path()
    hf_tok = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    for text in TEXTS:
        ids = smol.encode(text)
        assert ids == hf_tok(text, add_special_tokens=False).input_ids
        ours = np.asarray(jax.nn.log_softmax(Transformer(smol.config).apply({"params": smol.params}, jnp.array([ids]))[0]))
        with torch.no_grad():
            theirs = torch.log_softmax(hf(torch.tensor([ids])).logits[0], -1).numpy()
        assert (ours.argmax(-1) == theirs.argmax(-1)).all()
        assert np.abs(ours - theirs).max() < 2e-3  # float32, different summation order
    chat = [{"role": "user", "content": "Is this about cooking?"}]
    assert smol.render_chat(chat) == hf_tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)


def test_model_is_sensible(smol: Pretrained) -> None:
    ids = smol.encode("The capital of France is")
    logits = Transformer(smol.config).apply({"params": smol.params}, jnp.array([ids]))
    assert smol.tokenizer.decode([int(jnp.argmax(logits[0, -1]))]).strip() == "Paris"
    assert smol.config.num_layers == 30 and smol.config.num_kv_heads == 3 and smol.param_count() == 134_515_008


@pytest.mark.slow  # compiling a 30-layer forward+backward on CPU
def test_train_starts_from_pretrained_weights(smol: Pretrained, tmp_path: Path) -> None:
    from runner.train import train

    tok = tmp_path / "tok.json"
    smol.tokenizer.save(str(tok))
    text = tmp_path / "docs.jsonl"  # a small shard keeps tokenizing cheap; the model knows English
    text.write_text("".join(json.dumps({"text": f"Note {i}. {TEXTS[i % 2]}"}) + "\n" for i in range(24)))
    shape = {k: getattr(smol.config, k) for k in ("hidden_dim", "intermediate_dim", "num_layers", "num_heads",
                                                  "num_kv_heads", "vocab_size", "rope_theta")}
    cfg = parse_config({
        "name": "cpt",
        "model": {**shape, "seq_len": 16, "compute_dtype": "float32"},
        "train": {"batch_size": 2, "steps": 1, "init_from": "smollm2-135m"},
        "optimizer": {"learning_rate": 1e-7},
        "data": {"source": {"paths": [str(text)]}, "tokenizer": str(tok), "cache_dir": str(tmp_path / "cache"),
                 "val_fraction": 0.25},
        "eval": {"sets": [{"name": "val", "max_tokens": 64}]},
        "tracking": {"mode": "disabled"},
    })
    res = train(cfg, str(tmp_path / "out"), progress=False)
    # A random init of this vocabulary scores ~4 bits per byte; the pretrained model reads plain English well.
    assert res.bpb < 1.6, res.bpb


def test_init_from_shape_mismatch_names_the_field(smol: Pretrained) -> None:
    wrong = ModelConfig(hidden_dim=64, intermediate_dim=128, num_layers=2, num_heads=4, num_kv_heads=2,
                        seq_len=32, vocab_size=49152)
    with pytest.raises(ConfigError, match=r"train.init_from: model.hidden_dim: 64 but smollm2-135m has 576"):
        params_for(wrong, "smollm2-135m")


def test_bad_files_get_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such GGUF file"):
        load_gguf(tmp_path / "missing.gguf")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf file at all" * 10)
    with pytest.raises(ConfigError, match="junk.gguf: not a readable GGUF file"):
        load_gguf(junk)


def test_cli_info_and_tokenizer(tmp_path: Path) -> None:
    run = [sys.executable, "-m", "runner.cli", "pretrained"]
    info = subprocess.run([*run, "info"], capture_output=True, text=True, timeout=300)
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["model"]["num_layers"] == 30
    out = tmp_path / "tok.json"
    r = subprocess.run([*run, "export-tokenizer", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and json.loads(out.read_text())["model"]["type"] == "BPE"
    bad = subprocess.run([*run, "info", str(tmp_path / "nope.gguf")], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "nope.gguf: no such GGUF file" in bad.stderr
