"""Tokenize into the trainer's tensorstore cache, in the step's own folder.

A train step whose ``data.cache_dir`` is this step's output (``tok.output()``) and whose source is the same
finds the cache complete and reads it; nothing is tokenized twice.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from runner.config import DataConfig
from runner.executor import Step, StepContext


class TokenizeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    data: DataConfig
    splits: list[Literal["train", "val", "all"]] = ["train", "val"]


def run_tokenize(cfg: TokenizeConfig, ctx: StepContext) -> dict:
    from runner.data import load_split

    data = cfg.data.model_copy(update={"cache_dir": ctx.output_path})
    out: dict = {}
    for split in cfg.splits:
        if data.mixture:  # every component in the same cache, each under its own key
            out[split] = {}
            for c in data.mixture:
                m = load_split(data, split, source=c.source).manifest
                out[split][c.name] = {"documents": m.documents, "tokens": m.tokens, "bytes": m.bytes}
            continue
        m = load_split(data, split).manifest
        out[split] = {"documents": m.documents, "tokens": m.tokens, "bytes": m.bytes}
    return out


def tokenize(name: str, data: DataConfig, *, version: str = "v1", splits: list[str] | None = None) -> Step:
    cfg = TokenizeConfig(data=data, splits=splits or ["train", "val"])  # type: ignore[arg-type]
    return Step(name, run_tokenize, cfg, version=version, kind="tokenize")
