"""``datashop(name, prompt, ...)``: a domain expert's prompt becomes a labelled set, a classifier, a filtered
dataset and a trained model, compared with a control (Marin's Datashop, exp963's cascade).

The steps, in order (each a :class:`runner.executor.Step`, so ``openlab plan``/``run`` show and run them):

    ingest the pool -> annotate (LM labels a sample) -> pools (LM-accepted = positives, rejected = negatives)
    -> fastText classifier on those labels, scoring the pool, keeping the top fraction (scores beside the text)
    -> train on the kept documents | control: train on a random sample of the same size
    -> eval BPB of both -> compare (comparison.json: BPB of each, the difference, label stats, agreement)

The classifier's agreement with held-out LM labels is fastText's precision/recall on a held-out part of the
annotated set (``val_fraction``), recorded in the classifier's ``stats.json`` and copied into the comparison.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from runner import store
from runner.config import DataSource, EvalSet, RunConfig
from runner.executor import Step, StepContext
from runner.steps import eval_bpb, fasttext_filter, ingest, train
from runner.steps.annotate import ANNOTATIONS, annotate, read_annotations
from runner.steps.documents import DOCUMENTS, read_documents, write_documents


class PoolsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    annotations: str
    corpus: str
    positive_min: int = Field(description="An LM label at or above this is a positive.")
    keep_fraction: float = Field(gt=0, le=1)
    seed: int = 0


def make_pools(cfg: PoolsConfig, ctx: StepContext) -> dict:
    """Positives and negatives from the LM's labels (unparsable excluded), and the control sample."""
    rows = [r for r in read_annotations(cfg.annotations) if r["label"] is not None]
    pos = [r["text"] for r in rows if r["label"] >= cfg.positive_min]
    neg = [r["text"] for r in rows if r["label"] < cfg.positive_min]
    if not pos or not neg:
        raise ValueError(
            f"the LM labelled {len(pos)} documents positive and {len(neg)} negative (label >= {cfg.positive_min}); "
            "the classifier needs both: change the prompt, positive_min or annotate more documents"
        )
    corpus = read_documents(cfg.corpus)
    control = random.Random(cfg.seed).sample(corpus, max(1, round(len(corpus) * cfg.keep_fraction)))
    for name, docs in {"positive": pos, "negative": neg, "control": control}.items():
        write_documents(store.join(ctx.output_path, name, DOCUMENTS), docs)
    return {"positive": len(pos), "negative": len(neg), "control": len(control)}


def compare(cfg: dict, ctx: StepContext) -> dict:
    def first_bpb(path: str) -> float:
        evals = json.loads(store.read_text(store.join(path, "eval.json")))
        return float(next(iter(evals.values()))["bpb"])

    bpb = {k: first_bpb(cfg[k]) for k in ("datashop", "control")}
    annotate_stats = json.loads(store.read_text(store.join(cfg["annotate"], "stats.json")))
    classifier = json.loads(store.read_text(store.join(cfg["classifier"], "stats.json")))
    out = {
        "bpb": bpb,
        "datashop_minus_control": bpb["datashop"] - bpb["control"],
        "labels": {k: annotate_stats[k] for k in ("documents", "label_counts", "unparsable", "unparsable_rate")},
        "annotation_flops": annotate_stats["annotation_flops"],
        "classifier_agreement": {k: classifier.get(k) for k in ("val_precision", "val_recall", "val_examples")},
        "kept_documents": classifier.get("kept_documents"),
    }
    store.atomic_write_text(store.join(ctx.output_path, "comparison.json"), json.dumps(out, indent=2) + "\n")
    return out


def datashop(
    name: str,
    prompt: str,
    *,
    pool: DataSource,
    run: Callable[[str, str], RunConfig],
    eval_sets: list[EvalSet],
    positive_min: int = 3,
    keep_fraction: float = 0.5,
    annotate_kw: dict | None = None,
    fasttext_kw: dict | None = None,
    pool_split: str = "train",
) -> list[Step]:
    """The Datashop steps for ``prompt`` over ``pool``; ``run(run_name, documents)`` gives a training config.

    Returns ``[ingest, annotate, pools, classifier, train, control_train, eval, control_eval, compare]``; an
    experiment's ``STEPS = [steps[-1]]`` pulls in the rest.
    """
    raw = ingest(f"{name}/pool", pool, split=pool_split)
    labels = annotate(f"{name}/annotate", documents=raw.output(DOCUMENTS), prompt=prompt, **(annotate_kw or {}))
    pools = Step(
        f"{name}/pools", make_pools,
        PoolsConfig(annotations=labels.output(ANNOTATIONS), corpus=raw.output(DOCUMENTS),
                    positive_min=positive_min, keep_fraction=keep_fraction),
        kind="datashop_pools",
    )
    classifier = fasttext_filter(
        f"{name}/classifier",
        positive=pools.output(f"positive/{DOCUMENTS}"),
        negative=pools.output(f"negative/{DOCUMENTS}"),
        corpus=raw.output(DOCUMENTS),
        keep_fraction=keep_fraction,
        **({"val_fraction": 0.2} | (fasttext_kw or {})),
    )
    trained = train(f"{name}/train", run(f"{name.replace('/', '-')}-datashop", classifier.output(DOCUMENTS)))
    control = train(f"{name}/train_control",
                    run(f"{name.replace('/', '-')}-control", pools.output(f"control/{DOCUMENTS}")))
    ev = eval_bpb(f"{name}/eval", trained, eval_sets)
    ev_control = eval_bpb(f"{name}/eval_control", control, eval_sets)
    result = Step(
        f"{name}/compare", compare,
        {"datashop": ev.output(), "control": ev_control.output(), "annotate": labels.output(),
         "classifier": classifier.output()},
        kind="compare",
    )
    return [raw, labels, pools, classifier, trained, control, ev, ev_control, result]
