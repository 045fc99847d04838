"""Quality filter with fastText (DCLM/Marin recipe): train a classifier on positive and negative documents,
score a corpus by P(``__label__hq``), keep the top fraction or everything above a threshold.

Training data is one document per line, ``__label__hq <text>`` / ``__label__lq <text>``, lowercased with
whitespace collapsed (fastText reads one line per example). We depend on ``fasttext-numpy2``: the original
``fasttext`` 0.9.x ``predict`` calls ``np.array(..., copy=False)`` and raises under numpy 2.

Outputs in the step folder: ``model.bin``, ``documents.jsonl`` (the kept documents, each with its ``score``),
``stats.json`` (validation precision/recall, threshold used, counts).
"""

from __future__ import annotations

import json
import random
import re
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from runner import store
from runner.executor import Step, StepContext
from runner.steps.documents import DOCUMENTS, read_documents, write_documents

HQ, LQ = "__label__hq", "__label__lq"


class FastTextFilterConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    positive: str = Field(description="documents.jsonl of high-quality examples")
    negative: str = Field(description="documents.jsonl of low-quality examples")
    corpus: str = Field(description="documents.jsonl to filter")
    keep_fraction: float | None = Field(default=None, gt=0, le=1)
    threshold: float | None = Field(default=None, ge=0, le=1)
    val_fraction: float = Field(default=0.1, ge=0, lt=1)
    seed: int = 0
    epoch: int = Field(default=5, gt=0)
    lr: float = Field(default=0.1, gt=0)
    dim: int = Field(default=100, gt=0)
    word_ngrams: int = Field(default=2, gt=0)

    @model_validator(mode="after")
    def _one_rule(self) -> FastTextFilterConfig:
        if (self.keep_fraction is None) == (self.threshold is None):
            raise ValueError("keep_fraction: give exactly one of keep_fraction and threshold")
        return self


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower()).strip()


def train_classifier(pos: list[str], neg: list[str], cfg: FastTextFilterConfig, workdir: Path):  # type: ignore[no-untyped-def]
    import fasttext

    rows = [f"{HQ} {normalise(t)}" for t in pos] + [f"{LQ} {normalise(t)}" for t in neg]
    random.Random(cfg.seed).shuffle(rows)
    n_val = int(len(rows) * cfg.val_fraction)
    val, train = rows[:n_val], rows[n_val:]
    (workdir / "train.txt").write_text("\n".join(train) + "\n")
    model = fasttext.train_supervised(
        input=str(workdir / "train.txt"),
        epoch=cfg.epoch,
        lr=cfg.lr,
        dim=cfg.dim,
        wordNgrams=cfg.word_ngrams,
        minCount=1,
        thread=1,  # one thread: the classifier is a pure function of its inputs and seed
        seed=cfg.seed,
        verbose=0,
    )
    stats: dict = {"train_examples": len(train), "val_examples": len(val)}
    if val:
        (workdir / "val.txt").write_text("\n".join(val) + "\n")
        n, precision, recall = model.test(str(workdir / "val.txt"))
        stats |= {"val_precision": precision, "val_recall": recall}
    return model, stats


def hq_score(model, text: str) -> float:  # type: ignore[no-untyped-def]
    labels, probs = model.predict(normalise(text), k=-1)
    return float(dict(zip(labels, probs, strict=True)).get(HQ, 0.0))


def select(
    scores: list[float], keep_fraction: float | None, threshold: float | None
) -> tuple[list[int], float]:
    """Indices kept (in corpus order) and the score threshold that kept them; ties broken by position."""
    if keep_fraction is not None:
        k = max(1, round(len(scores) * keep_fraction))
        top = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]
        return sorted(top), min((scores[i] for i in top), default=1.0)
    assert threshold is not None
    return [i for i, s in enumerate(scores) if s >= threshold], threshold


def run_fasttext_filter(cfg: FastTextFilterConfig, ctx: StepContext) -> dict:
    pos, neg, corpus = read_documents(cfg.positive), read_documents(cfg.negative), read_documents(cfg.corpus)
    with tempfile.TemporaryDirectory(prefix="openlab-fasttext-") as tmp:
        model, stats = train_classifier(pos, neg, cfg, Path(tmp))
        scores = [hq_score(model, t) for t in corpus]
        keep, cut = select(scores, cfg.keep_fraction, cfg.threshold)
        kept = [(corpus[i], scores[i]) for i in keep]
        model.save_model(str(Path(tmp) / "model.bin"))
        store.atomic_write_bytes(
            store.join(ctx.output_path, "model.bin"), (Path(tmp) / "model.bin").read_bytes()
        )
    write_documents(
        store.join(ctx.output_path, DOCUMENTS), [t for t, _ in kept], ({"score": s} for _, s in kept)
    )
    stats |= {"threshold": cut, "corpus_documents": len(corpus), "kept_documents": len(kept)}
    store.atomic_write_text(store.join(ctx.output_path, "stats.json"), json.dumps(stats, indent=2) + "\n")
    return stats


def fasttext_filter(name: str, *, version: str = "v1", **kw: object) -> Step:
    """A filter step; ``positive``, ``negative`` and ``corpus`` are documents.jsonl paths or step references."""
    return Step(
        name, run_fasttext_filter, FastTextFilterConfig(**kw), version=version, kind="fasttext_filter"
    )  # type: ignore[arg-type]
