"""Batches from a weighted data mixture: every batch holds each component in proportion to its weight.

A batch of ``B`` sequences gets ``round(weight * B)`` rows of each component (largest remainders, so the counts
add up to ``B``), each component's rows drawn by its own :class:`Batches` (a stateless permutation per epoch
of that component's windows). So batch ``i`` is still a pure function of (seed, i): resuming needs only the
step, as with one source. A component whose share of a batch rounds to no row is refused, naming it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np

from runner.data.batches import Batches
from runner.data.cache import TokenData
from runner.errors import DataError


def row_counts(weights: dict[str, float], batch_size: int) -> dict[str, int]:
    """Rows per component for normalised ``weights``: floors, then the largest remainders get one more."""
    exact = {k: w * batch_size for k, w in weights.items()}
    counts = {k: int(v) for k, v in exact.items()}
    short = batch_size - sum(counts.values())
    for k in sorted(exact, key=lambda k: (counts[k] - exact[k], k))[:short]:
        counts[k] += 1
    return counts


@dataclass(frozen=True)
class MixtureBatches:
    """Training batches of shape (batch_size, seq_len + 1), int32, from several tokenized sources."""

    parts: tuple[tuple[str, float, Batches], ...]

    @classmethod
    def build(
        cls, data: dict[str, TokenData], weights: dict[str, float], seq_len: int, batch_size: int, seed: int
    ) -> MixtureBatches:
        counts = row_counts(weights, batch_size)
        parts = []
        for name, d in data.items():
            if counts[name] == 0:
                raise DataError(
                    f"data.mixture: {name!r} (weight {weights[name]:.3g}) gets no row of a {batch_size}-sequence "
                    "batch; raise its weight or the batch size"
                )
            parts.append((name, weights[name], Batches(d, seq_len, counts[name], seed)))
        return cls(parts=tuple(parts))

    @property
    def fingerprint(self) -> str:
        body = [(name, w, b.batch_size, b.data.fingerprint) for name, w, b in self.parts]
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()

    def batch(self, step: int) -> np.ndarray:
        return np.concatenate([b.batch(step) for _, _, b in self.parts])
