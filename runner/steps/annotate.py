"""The ``annotate`` step: a prompt template with ``{example}``, documents from a shard, LM labels out.

Outputs in the step folder: ``annotations.jsonl`` (per document: text, label or null, confidence, error, what
the LM said) and ``stats.json`` (label counts, unparsable count and rate, tokens read, annotation FLOPs,
seconds). Garbage from the LM is recorded there and excluded downstream, never raised. The plan counts the
annotation's model FLOPs as 2 x params x tokens (a forward pass only), so budgets see them before it runs.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from runner import store
from runner.executor import Step, StepContext
from runner.steps.documents import read_documents

ANNOTATIONS = "annotations.jsonl"
CHAT_OVERHEAD_TOKENS = 40  # the chat template's system turn and markers around the user's prompt


class AnnotateConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    documents: str = Field(description="documents.jsonl to label (a path or a step reference)")
    prompt: str = Field(description="The domain expert's prompt; `{example}` is where the document goes.")
    engine: Literal["local", "openai"] = "local"
    model: str | None = Field(default=None, description="local: a .gguf path or None (SmolLM2-135M-Instruct); "
                              "openai: the served model's name")
    base_url: str | None = Field(default=None, description="openai engine: e.g. http://vllm:8000/v1")
    min_score: int = Field(default=0, ge=0, le=9)
    max_score: int = Field(default=5, ge=0, le=9)
    min_mass: float = Field(default=0.5, gt=0, le=1)
    max_documents: int = Field(default=100, gt=0)
    max_doc_tokens: int = Field(default=512, gt=0)
    batch_size: int = Field(default=8, gt=0)
    concurrency: int = Field(default=4, gt=0)
    requests_per_second: float | None = Field(default=None, gt=0)
    retries: int = Field(default=4, ge=0)
    seed: int = 0

    @field_validator("prompt")
    @classmethod
    def _prompt(cls, v: str) -> str:
        from runner.annotation.labels import check_template

        problems = check_template(v)
        if problems:
            raise ValueError("; ".join(problems))
        return v

    @model_validator(mode="after")
    def _engine(self) -> AnnotateConfig:
        if self.min_score >= self.max_score:
            raise ValueError(f"max_score: {self.max_score} must be above min_score {self.min_score}")
        if self.engine == "openai" and (not self.base_url or not self.model):
            raise ValueError("base_url: the openai engine needs base_url and model")
        return self

    def _header(self):  # type: ignore[no-untyped-def]
        from runner.pretrained import read_header_cached

        return read_header_cached(self.model if self.engine == "local" else None)

    def flops_estimate(self) -> float:
        """Upper bound at plan time: every one of max_documents at max_doc_tokens, plus prompt and chat."""
        header = self._header()
        prompt_tokens = len(header.encode(self.prompt)) + CHAT_OVERHEAD_TOKENS
        return 2.0 * header.metadata["param_count"] * self.max_documents * (prompt_tokens + self.max_doc_tokens)


def make_engine(cfg: AnnotateConfig):  # type: ignore[no-untyped-def]
    if cfg.engine == "openai":
        from runner.annotation.openai_engine import OpenAIEngine

        return OpenAIEngine(cfg.base_url or "", cfg.model or "", min_score=cfg.min_score, max_score=cfg.max_score,
                            min_mass=cfg.min_mass, concurrency=cfg.concurrency,
                            requests_per_second=cfg.requests_per_second, retries=cfg.retries)
    from runner.annotation.local import LocalEngine

    return LocalEngine(cfg.model, min_score=cfg.min_score, max_score=cfg.max_score, min_mass=cfg.min_mass,
                       batch_size=cfg.batch_size)


def truncate(header, text: str, max_tokens: int) -> str:  # type: ignore[no-untyped-def]
    ids = header.encode(text)
    return text if len(ids) <= max_tokens else header.tokenizer.decode(ids[:max_tokens])


def summarize(labels: list[int | None], tokens: int, params: int, seconds: float) -> dict:
    counts = Counter(str(x) for x in labels if x is not None)
    bad = sum(1 for x in labels if x is None)
    return {
        "documents": len(labels),
        "label_counts": dict(sorted(counts.items())),
        "unparsable": bad,
        "unparsable_rate": bad / len(labels) if labels else 0.0,
        "tokens": tokens,
        "annotation_flops": 2.0 * params * tokens,
        "seconds": seconds,
        "documents_per_second": len(labels) / seconds if seconds else None,
    }


def run_annotate(cfg: AnnotateConfig, ctx: StepContext) -> dict:
    from runner.annotation.labels import render_prompt

    docs = read_documents(cfg.documents)
    order = list(range(len(docs)))
    random.Random(cfg.seed).shuffle(order)
    chosen = sorted(order[: cfg.max_documents])
    header = cfg._header()
    texts = [truncate(header, docs[i], cfg.max_doc_tokens) for i in chosen]
    engine = make_engine(cfg)
    start = time.perf_counter()
    anns = []
    step = max(cfg.batch_size * 4, 1)
    for at in range(0, len(texts), step):  # progress in the log for long pools
        anns += engine.annotate([render_prompt(cfg.prompt, t) for t in texts[at : at + step]])
    seconds = time.perf_counter() - start
    rows = [
        {"index": i, "text": docs[i], "label": a.label, "confidence": a.confidence, "error": a.error, "raw": a.raw}
        for i, a in zip(chosen, anns, strict=True)
    ]
    store.atomic_write_text(store.join(ctx.output_path, ANNOTATIONS),
                            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    stats = summarize([a.label for a in anns], sum(a.tokens for a in anns), header.metadata["param_count"], seconds)
    stats |= {"engine": cfg.engine, "model": header.name if cfg.engine == "local" else cfg.model,
              "pool_documents": len(docs)}
    store.atomic_write_text(store.join(ctx.output_path, "stats.json"), json.dumps(stats, indent=2) + "\n")
    return stats


def read_annotations(url: str) -> list[dict]:
    return [json.loads(line) for line in store.read_text(url).splitlines() if line.strip()]


def annotate(name: str, *, version: str = "v1", **kw: object) -> Step:
    """An annotate step; ``documents`` is a documents.jsonl path or a step reference."""
    return Step(name, run_annotate, AnnotateConfig(**kw), version=version, kind="annotate")  # type: ignore[arg-type]


__all__ = ["ANNOTATIONS", "AnnotateConfig", "annotate", "read_annotations", "run_annotate"]
