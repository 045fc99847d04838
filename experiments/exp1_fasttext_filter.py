"""Experiment 1: does a fastText quality filter help? Filtered vs unfiltered training, same eval set.

Hypothesis: on a corpus where half the documents are low-quality noise, keeping the half a fastText classifier
scores highest lowers BPB on held-out clean text, at equal training tokens.

Graph (all offline, a few minutes on 2 CPU cores):

    ingest pydoc train docs -> split into paragraphs -> {classifier positives, clean half of the corpus}
    synthetic noise          -> {classifier negatives, noisy half of the corpus}
    fastText filter (keep 50% of the corpus) -> train -> eval BPB on pydoc val
    the unfiltered corpus                    -> train -> eval BPB on pydoc val
    compare -> comparison.json
"""

from __future__ import annotations

import json
import random

from pydantic import BaseModel, ConfigDict

from runner import store
from runner.config import DataSource, EvalSet, RunConfig
from runner.executor import Step, StepContext
from runner.steps import eval_bpb, fasttext_filter, ingest, train
from runner.steps.documents import DOCUMENTS, read_documents, write_documents


class SplitConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    documents: str
    noise_chars: int = 600
    seed: int = 1


def make_pools(cfg: SplitConfig, ctx: StepContext) -> dict:
    """Paragraphs of clean text, and as many noise documents (shuffled words, spam), split between the
    classifier's training pools and the corpus to filter."""
    rng = random.Random(cfg.seed)
    paras = [
        p.strip() for d in read_documents(cfg.documents) for p in d.split("\n\n") if len(p.strip()) > 200
    ]
    rng.shuffle(paras)
    words = " ".join(paras).split()
    spam = ["BUY NOW", "click here", "free!!!", "limited offer", "$$$", "subscribe", "winner"]

    def noise() -> str:
        out: list[str] = []
        while sum(len(w) + 1 for w in out) < cfg.noise_chars:
            out.append(rng.choice(spam) if rng.random() < 0.3 else rng.choice(words)[::-1])
        return " ".join(out)

    half = len(paras) // 2
    pools = {
        "positive": paras[:half],
        "negative": [noise() for _ in range(half)],
        "corpus": paras[half:] + [noise() for _ in range(len(paras) - half)],
    }
    rng.shuffle(pools["corpus"])
    for name, docs in pools.items():
        write_documents(store.join(ctx.output_path, name, DOCUMENTS), docs)
    return {k: len(v) for k, v in pools.items()}


def compare(cfg: dict, ctx: StepContext) -> dict:
    bpb = {
        k: json.loads(store.read_text(store.join(v, "eval.json")))["pydoc_val"]["bpb"] for k, v in cfg.items()
    }
    out = {"bpb": bpb, "filtered_minus_baseline": bpb["filtered"] - bpb["baseline"]}
    store.atomic_write_text(store.join(ctx.output_path, "comparison.json"), json.dumps(out, indent=2) + "\n")
    return out


def tiny_run(name: str, documents: str) -> RunConfig:
    return RunConfig.model_validate(
        {
            "name": name,
            "track": "exp1",
            "model": {
                "hidden_dim": 64, "intermediate_dim": 192, "num_layers": 2, "num_heads": 2, "num_kv_heads": 1,
                "seq_len": 128, "vocab_size": 264, "compute_dtype": "float32",
            },
            "train": {"batch_size": 8, "steps": 120, "seed": 0, "log_every": 20},
            "optimizer": {"learning_rate": 3e-3},
            "schedule": {"warmup_steps": 10},
            "data": {"source": {"paths": [documents]}, "tokenizer": "byte"},
            "eval": {"sets": [{"name": "pydoc_val", "source": {"builtin": "pydoc"}}]},
        }
    )  # fmt: skip


raw = ingest("exp1/pydoc_train", DataSource(builtin="pydoc"), split="train")
pools = Step("exp1/pools", make_pools, SplitConfig(documents=raw.output(DOCUMENTS)), kind="custom")
filtered = fasttext_filter(
    "exp1/fasttext_filter",
    positive=pools.output(f"positive/{DOCUMENTS}"),
    negative=pools.output(f"negative/{DOCUMENTS}"),
    corpus=pools.output(f"corpus/{DOCUMENTS}"),
    keep_fraction=0.5,
    epoch=10,
)
val = [EvalSet(name="pydoc_val", source=DataSource(builtin="pydoc"))]
runs = {
    "filtered": train("exp1/train_filtered", tiny_run("exp1-filtered", filtered.output(DOCUMENTS))),
    "baseline": train(
        "exp1/train_unfiltered", tiny_run("exp1-unfiltered", pools.output(f"corpus/{DOCUMENTS}"))
    ),
}
evals = {k: eval_bpb(f"exp1/eval_{k}", t, val) for k, t in runs.items()}
result = Step("exp1/compare", compare, {k: e.output() for k, e in evals.items()}, kind="compare")

STEPS = [result]

if __name__ == "__main__":
    from runner.executor_cli import main

    main()
