"""Ingest text: a Hugging Face dataset pinned by name and revision, local files, or the builtin corpus,
written as ``documents.jsonl`` in the step's folder."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from runner import store
from runner.config import DataSource
from runner.executor import Step, StepContext
from runner.steps.documents import DOCUMENTS, write_documents


class IngestConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    source: DataSource
    split: Literal["train", "val", "all"] = "all"
    val_fraction: float = Field(default=0.1, gt=0, lt=1)
    max_documents: int | None = Field(default=None, gt=0)


def run_ingest(cfg: IngestConfig, ctx: StepContext) -> dict:
    from itertools import islice

    from runner.data import iter_documents

    docs = iter_documents(cfg.source, cfg.split, cfg.val_fraction)
    if cfg.max_documents:
        docs = islice(docs, cfg.max_documents)
    texts = list(docs)
    n = write_documents(store.join(ctx.output_path, DOCUMENTS), texts)
    return {"documents": n, "chars": sum(len(t) for t in texts)}


def ingest(name: str, source: DataSource, *, version: str = "v1", **kw: object) -> Step:
    """A step writing ``{output}/documents.jsonl`` from ``source``; read it with ``step.output('documents.jsonl')``."""
    return Step(name, run_ingest, IngestConfig(source=source, **kw), version=version, kind="ingest")  # type: ignore[arg-type]
