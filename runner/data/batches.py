"""Deterministic batches: batch ``i`` is a pure function of (seed, i), so resuming needs only the step.

The token stream of a split (documents joined by end-of-text) is cut into ``n = (tokens - 1) // seq_len``
non-overlapping windows of ``seq_len + 1`` tokens (inputs plus shifted targets). Example ``e = i * batch + j``
reads window ``perm_epoch(e mod n)`` with ``epoch = e // n``: a stateless Feistel permutation keyed by
sha256(seed, epoch), evaluated with cycle walking (as Levanter's ``FeistelPermutation``), so every epoch visits
every window exactly once in a fresh order, with no state to save and no shuffle buffer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from runner.data.cache import TokenData
from runner.errors import DataError

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_ROUNDS = 4


def _mix(x: np.ndarray, key: np.uint64) -> np.ndarray:
    """splitmix64's finaliser: a cheap, well-mixed 64-bit hash (uint64 arithmetic wraps by design)."""
    with np.errstate(over="ignore"):
        x = x ^ key
        x = (x ^ (x >> np.uint64(30))) * _M1
        x = (x ^ (x >> np.uint64(27))) * _M2
        return x ^ (x >> np.uint64(31))


def _round_keys(seed: int, epoch: int) -> list[np.uint64]:
    h = hashlib.sha256(f"openlab-feistel:{seed}:{epoch}".encode()).digest()
    return [np.uint64(int.from_bytes(h[8 * r : 8 * r + 8], "little")) for r in range(_ROUNDS)]


def permute(x: np.ndarray, n: int, seed: int, epoch: int) -> np.ndarray:
    """A bijection of [0, n) applied to ``x``: Feistel rounds over 2h bits, cycle-walking back into range."""
    if n == 1:
        return np.zeros_like(x)
    half = max(1, ((n - 1).bit_length() + 1) // 2)
    mask = np.uint64((1 << half) - 1)
    keys = _round_keys(seed, epoch)

    def feistel(v: np.ndarray) -> np.ndarray:
        left, right = v >> np.uint64(half), v & mask
        for k in keys:
            left, right = right, left ^ (_mix(right, k) & mask)
        return (left << np.uint64(half)) | right

    y = feistel(x.astype(np.uint64))
    out_of_range = y >= n
    while out_of_range.any():
        y[out_of_range] = feistel(y[out_of_range])
        out_of_range = y >= n
    return y.astype(np.int64)


@dataclass(frozen=True)
class Batches:
    """Training batches of shape (batch_size, seq_len + 1), int32, from one tokenized split."""

    data: TokenData
    seq_len: int
    batch_size: int
    seed: int

    def __post_init__(self) -> None:
        m = self.data.manifest
        if m.tokens < self.seq_len + 1:
            raise DataError(
                f"model.seq_len: {self.seq_len} is longer than the whole {m.split} split of {m.source} "
                f"({m.tokens} tokens in {m.documents} documents)"
            )
        if m.max_document_tokens < self.seq_len:
            raise DataError(
                f"model.seq_len: {self.seq_len} is longer than every document of {m.source} "
                f"(the longest has {m.max_document_tokens} tokens); lower seq_len"
            )

    @property
    def windows(self) -> int:
        return (self.data.manifest.tokens - 1) // self.seq_len

    def indices(self, step: int) -> np.ndarray:
        e = np.arange(step * self.batch_size, (step + 1) * self.batch_size, dtype=np.int64)
        n = self.windows
        out = np.empty_like(e)
        for epoch in np.unique(e // n):
            sel = (e // n) == epoch
            out[sel] = permute(e[sel] % n, n, self.seed, int(epoch))
        return out

    def batch(self, step: int) -> np.ndarray:
        starts = self.indices(step) * self.seq_len
        rows = starts[:, None] + np.arange(self.seq_len + 1)[None, :]
        return self.data.tokens[rows].astype(np.int32)


def eval_windows(data: TokenData, seq_len: int, max_tokens: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every target token of a split exactly once, in order: (windows (n, seq_len + 1) int32, valid (n, seq_len)).

    The last window is padded; ``valid`` marks real targets. ``max_tokens`` caps the number of targets.
    """
    tokens = data.tokens
    n_targets = len(tokens) - 1
    if max_tokens is not None:
        n_targets = min(n_targets, max_tokens)
    if n_targets < 1:
        raise DataError(f"eval set {data.manifest.source}: fewer than 2 tokens")
    n = -(-n_targets // seq_len)
    padded = np.zeros(n * seq_len + 1, dtype=np.int32)
    padded[: n_targets + 1] = tokens[: n_targets + 1]
    rows = (np.arange(n) * seq_len)[:, None] + np.arange(seq_len + 1)[None, :]
    valid = (np.arange(n * seq_len) < n_targets).reshape(n, seq_len)
    return padded[rows], valid
