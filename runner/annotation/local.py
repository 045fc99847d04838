"""The ``local`` engine: the pretrained model in our JAX ``Transformer``, jitted and batched.

Prompts are tokenized with the model's chat template, right-padded to a length bucket (multiples of 64, so a
handful of compiles cover every document) and run in fixed-size batches; the causal mask makes the padding
harmless, and the answer distribution is read at each prompt's last real position. The batch is placed on every
device JAX sees (data parallel) when there are several.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from runner.annotation.labels import ANSWER_PREFIX, Annotation, allowed_answers, from_logprobs
from runner.model import Transformer
from runner.pretrained import Pretrained, load_cached

BUCKET = 64


class ModelRunner:
    """Next-token log-probabilities for a batch of token-id lists, one jitted forward per (batch, bucket)."""

    def __init__(self, pre: Pretrained, batch_size: int = 8) -> None:
        self.pre = pre
        n_dev = jax.device_count()
        self.batch_size = max(batch_size, n_dev) // n_dev * n_dev
        mesh = Mesh(np.array(jax.devices()), ("data",))
        self._rows = NamedSharding(mesh, PartitionSpec("data"))  # the batch split over every device
        self._fn: Callable = jax.jit(partial(_last_logprobs, pre.config))
        self._params = jax.device_put(pre.params, NamedSharding(mesh, PartitionSpec()))
        self.tokens_seen = 0

    def next_logprobs(self, seqs: list[list[int]]) -> np.ndarray:
        """(len(seqs), vocab) float32 log-probabilities of the token after each sequence."""
        out = []
        for start in range(0, len(seqs), self.batch_size):
            chunk = seqs[start : start + self.batch_size]
            width = BUCKET * math.ceil(max(len(s) for s in chunk) / BUCKET)
            ids = np.zeros((self.batch_size, width), dtype=np.int32)
            last = np.zeros(self.batch_size, dtype=np.int32)
            for i, s in enumerate(chunk):
                ids[i, : len(s)], last[i] = s, len(s) - 1
            self.tokens_seen += sum(len(s) for s in chunk)
            ids_d, last_d = jax.device_put(ids, self._rows), jax.device_put(last, self._rows)
            out.append(np.asarray(self._fn(self._params, ids_d, last_d))[: len(chunk)])
        return np.concatenate(out) if out else np.zeros((0, self.pre.config.vocab_size), np.float32)

    def generate(self, ids: list[int], max_tokens: int, stop: set[int]) -> tuple[list[int], list[np.ndarray]]:
        """Greedy decoding without a KV cache (annotation answers are a few tokens)."""
        out: list[int] = []
        dists: list[np.ndarray] = []
        for _ in range(max_tokens):
            lp = self.next_logprobs([ids + out])[0]
            tok = int(lp.argmax())
            dists.append(lp)
            out.append(tok)
            if tok in stop:
                break
        return out, dists


def _last_logprobs(cfg, params, ids, last):  # type: ignore[no-untyped-def]
    logits = Transformer(cfg).apply({"params": params}, ids)
    at_last = jnp.take_along_axis(logits, last[:, None, None], axis=1)[:, 0, :]
    return jax.nn.log_softmax(at_last.astype(jnp.float32), axis=-1)


class LocalEngine:
    """Labels from the log-probabilities of the allowed answers, read from our JAX model."""

    def __init__(self, model: str | None = None, *, min_score: int = 0, max_score: int = 5,
                 min_mass: float = 0.5, batch_size: int = 8, compute_dtype: str | None = None,
                 answer_prefix: str = ANSWER_PREFIX) -> None:
        dtype = compute_dtype or ("float32" if jax.default_backend() == "cpu" else "bfloat16")
        self.pre = load_cached(model, dtype)
        self.runner = ModelRunner(self.pre, batch_size)
        self.min_score, self.max_score, self.min_mass = min_score, max_score, min_mass
        self.answer_prefix = answer_prefix
        self.answer_ids = {}
        for a in allowed_answers(min_score, max_score):
            ids = self.pre.encode(a)
            if len(ids) != 1:
                raise ValueError(f"answer {a!r} is {len(ids)} tokens in this tokenizer; scores must be one token")
            self.answer_ids[a] = ids[0]

    def chat_ids(self, prompt: str) -> list[int]:
        chat = self.pre.render_chat([{"role": "user", "content": prompt}]) + self.answer_prefix
        return self.pre.encode(chat)

    def annotate(self, prompts: list[str]) -> list[Annotation]:
        seqs = [self.chat_ids(p) for p in prompts]
        dists = self.runner.next_logprobs(seqs)
        out = []
        for seq, lp in zip(seqs, dists, strict=True):
            top = {self.pre.tokenizer.decode([int(i)]): float(lp[i]) for i in np.argsort(-lp)[:5]}
            scores = top | {a: float(lp[i]) for a, i in self.answer_ids.items()}
            ann = from_logprobs(scores, self.min_score, self.max_score, self.min_mass)
            out.append(ann.model_copy(update={"tokens": len(seq)}))
        return out
