"""``datashop(name, prompt, ...)``: a domain expert's prompt becomes a labelled set, a classifier, a filtered
dataset and a trained model, compared with a control (Marin's Datashop, exp963's cascade).

The steps, in order (each a :class:`runner.executor.Step`, so ``openlab plan``/``run`` show and run them):

    ingest the pool -> annotate (LM labels a sample) -> pools (LM-accepted = positives, rejected = negatives)
    -> fastText classifier on those labels, keeping the top fraction of the pool | scores: every pool document
       with its classifier score beside it (the data browser shows and filters it)
    -> train on the kept documents | control: train on a random sample of the same size
    -> eval BPB of both -> compare (comparison.json: BPB of each, the difference, label stats, agreement)

The classifier's agreement with held-out LM labels is fastText's precision/recall on a held-out part of the
annotated set (``val_fraction``), recorded in the classifier's ``stats.json`` and copied into the comparison.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Callable
from pathlib import Path

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


class ScoreConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    classifier: str = Field(description="The classifier step's model.bin")
    corpus: str


def score_pool(cfg: ScoreConfig, ctx: StepContext) -> dict:
    """Every pool document with the classifier's score beside it (``datashop_score``: the data browser shows it
    and filters on it, e.g. ``datashop_score>=0.5``)."""
    import fasttext

    from runner.steps.fasttext_filter import hq_score

    docs = read_documents(cfg.corpus)
    with tempfile.TemporaryDirectory(prefix="openlab-datashop-") as tmp:
        local = Path(tmp) / "model.bin"  # fastText loads from a local path; the store may be remote
        local.write_bytes(store.read_bytes(cfg.classifier))
        model = fasttext.load_model(str(local))
        scores = [hq_score(model, t) for t in docs]
    write_documents(store.join(ctx.output_path, DOCUMENTS), docs, ({"datashop_score": s} for s in scores))
    return {"documents": len(docs), "mean_score": sum(scores) / len(scores) if scores else None}


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

    Returns ``[ingest, annotate, pools, classifier, scores, train, control_train, eval, control_eval, compare]``; an
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
    scored = Step(f"{name}/scores", score_pool,
                  ScoreConfig(classifier=classifier.output("model.bin"), corpus=raw.output(DOCUMENTS)),
                  kind="datashop_scores")
    trained = train(f"{name}/train", run(f"{name.replace('/', '-')}-datashop", classifier.output(DOCUMENTS)))
    control = train(f"{name}/train_control",
                    run(f"{name.replace('/', '-')}-control", pools.output(f"control/{DOCUMENTS}")))
    ev = eval_bpb(f"{name}/eval", trained, eval_sets)
    ev_control = eval_bpb(f"{name}/eval_control", control, eval_sets)
    result = Step(
        f"{name}/compare", compare,
        {"datashop": ev.output(), "control": ev_control.output(), "annotate": labels.output(),
         "classifier": classifier.output(), "scores": scored.output()},
        kind="compare",
    )
    return [raw, labels, pools, classifier, scored, trained, control, ev, ev_control, result]
