"""Bits per byte, exactly: ``bpb = sum(nats) / (ln 2 * sum(UTF-8 bytes of the target tokens))``.

Both sums run over the same targets, in float64 on the host (the model's per-token nats come back as float32,
each is widened before adding, so no batch-level averaging error creeps in, unlike a running mean of per-batch
BPB). Special tokens (0 bytes, e.g. end-of-text) are excluded from *both* sums, as nanochat does. Every target
token of an eval set is scored exactly once, in order (see :func:`runner.data.eval_windows`).

Public entry points:

- :func:`bpb` ``(nats: np.ndarray, target_bytes: np.ndarray) -> float``: the definition, on per-token arrays.
- :class:`EvalSums`: running float64/int sums; ``.add(nats, targets, valid, token_bytes)``, ``.result()``.
- :func:`evaluate` ``(params, model_cfg, data, token_bytes, *, batch_size, mesh=None, max_tokens=None)
  -> EvalSetResult``.
- :func:`load_eval_sets` ``(cfg: RunConfig, tokenizer) -> dict[str, TokenData]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import jax
import numpy as np
from jax.sharding import Mesh

from runner.config import ModelConfig, RunConfig
from runner.data import TokenData, Tokenizer, eval_windows, load_split
from runner.errors import DataError
from runner.model import Params, token_nats
from runner.parallel import batch_sharding, make_mesh, put_global, to_host
from runner.schema import EvalSetResult


def bpb(nats: np.ndarray, target_bytes: np.ndarray) -> float:
    """The definition: tokens with 0 bytes (specials) are dropped from both sums."""
    nats = np.asarray(nats, dtype=np.float64).ravel()
    b = np.asarray(target_bytes, dtype=np.int64).ravel()
    keep = b > 0
    total_bytes = int(b[keep].sum())
    if total_bytes == 0:
        raise ValueError("no target bytes to score")
    return float(nats[keep].sum() / (math.log(2) * total_bytes))


@dataclass
class EvalSums:
    nats: float = 0.0
    bytes: int = 0
    tokens: int = 0

    def add(self, nats: np.ndarray, targets: np.ndarray, valid: np.ndarray, token_bytes: np.ndarray) -> None:
        b = token_bytes[targets] * valid
        keep = b > 0
        self.nats += float(np.asarray(nats, dtype=np.float64)[keep].sum())
        self.bytes += int(b[keep].sum())
        self.tokens += int(keep.sum())

    def result(self) -> EvalSetResult:
        if self.bytes == 0:
            raise DataError("eval set has no scorable bytes")
        return EvalSetResult(
            bpb=self.nats / (math.log(2) * self.bytes),
            loss=self.nats / self.tokens,
            bytes=self.bytes,
            tokens=self.tokens,
        )


@partial(jax.jit, static_argnums=(1,))
def _nats(params: Params, cfg: ModelConfig, windows: jax.Array) -> jax.Array:
    return token_nats(params, cfg, windows)[0]


def evaluate(
    params: Params,
    model_cfg: ModelConfig,
    data: TokenData,
    token_bytes: np.ndarray,
    *,
    batch_size: int,
    mesh: Mesh | None = None,
    max_tokens: int | None = None,
) -> EvalSetResult:
    """Exact BPB and mean loss (nats/token) of ``params`` on every target token of ``data``."""
    mesh = mesh or make_mesh()
    n_dev = mesh.devices.size
    batch_size = -(-batch_size // n_dev) * n_dev  # a multiple of the device count
    windows, valid = eval_windows(data, model_cfg.seq_len, max_tokens)
    pad = -len(windows) % batch_size
    if pad:  # padded rows are all-invalid, so they add nothing
        windows = np.concatenate([windows, np.zeros((pad, windows.shape[1]), windows.dtype)])
        valid = np.concatenate([valid, np.zeros((pad, valid.shape[1]), bool)])
    sharding = batch_sharding(mesh, 2)
    sums = EvalSums()
    for i in range(0, len(windows), batch_size):
        w = windows[i : i + batch_size]
        nats = to_host(_nats(params, model_cfg, put_global(w, sharding)))
        sums.add(nats, w[:, 1:], valid[i : i + batch_size], token_bytes)
    return sums.result()


def load_eval_sets(cfg: RunConfig, tokenizer: Tokenizer) -> dict[str, TokenData]:
    """Each configured eval set: the held-out split of the train data, or all of an explicit source."""
    out = {}
    for s in cfg.eval.sets:
        if s.source is None:
            out[s.name] = load_split(cfg.data, "val", tokenizer=tokenizer)
        elif s.source.builtin is not None:
            out[s.name] = load_split(cfg.data, "val", source=s.source, tokenizer=tokenizer)
        else:
            out[s.name] = load_split(cfg.data, "all", source=s.source, tokenizer=tokenizer)
    return out
