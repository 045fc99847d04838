"""The Datashop chain: the annotate step's outputs and stats, the pools it feeds, the example's plan."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runner.datashop import PoolsConfig, make_pools
from runner.executor import StepContext
from runner.pretrained import Pretrained
from runner.steps.annotate import AnnotateConfig, run_annotate
from runner.steps.documents import write_documents

REPO = Path(__file__).resolve().parents[2]
PROMPT = ("Rate how much the following text is about cooking or food, from 0 (not at all) to 5 (entirely).\n\n"
          "Text: {example}\n\nReply with the score only.")


def _ctx(out: Path, name: str) -> StepContext:
    return StepContext(name=name, version="v1", output_path=str(out), run_id="test", dep_paths={})


def test_annotate_step_writes_labels_and_stats(smol: Pretrained, tmp_path: Path) -> None:
    docs = tmp_path / "documents.jsonl"
    write_documents(str(docs), ["Slice the onions and fry them in olive oil until golden.",
                                "The socket module provides the BSD socket interface.",
                                "Whisk two eggs with milk and pour them into a hot buttered pan."])
    cfg = AnnotateConfig(documents=str(docs), prompt=PROMPT, max_documents=2, max_doc_tokens=64)
    stats = run_annotate(cfg, _ctx(tmp_path / "out", "annotate"))
    rows = [json.loads(x) for x in (tmp_path / "out" / "annotations.jsonl").read_text().splitlines()]
    assert stats["documents"] == len(rows) == 2 and stats["pool_documents"] == 3
    assert sum(stats["label_counts"].values()) + stats["unparsable"] == 2
    assert stats["annotation_flops"] == 2 * smol.param_count() * stats["tokens"] > 0
    assert json.loads((tmp_path / "out" / "stats.json").read_text())["engine"] == "local"
    assert 0 < stats["annotation_flops"] <= cfg.flops_estimate()  # the plan's figure is an upper bound


def test_bad_annotate_configs_name_the_field() -> None:
    with pytest.raises(ValueError, match=r"prompt\n.*must contain `\{example\}`"):
        AnnotateConfig(documents="d", prompt="Rate this text from zero to five.")
    with pytest.raises(ValueError, match="needs base_url and model"):
        AnnotateConfig(documents="d", prompt=PROMPT, engine="openai")


def test_pools_exclude_unparsable_and_need_both_classes(tmp_path: Path) -> None:
    ann = tmp_path / "annotations.jsonl"
    corpus = tmp_path / "documents.jsonl"
    write_documents(str(corpus), [f"doc {i}" for i in range(10)])
    rows = [{"text": "good", "label": 5}, {"text": "bad", "label": 1}, {"text": "junk", "label": None}]
    ann.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = PoolsConfig(annotations=str(ann), corpus=str(corpus), positive_min=3, keep_fraction=0.3)
    assert make_pools(cfg, _ctx(tmp_path / "p", "pools")) == {"positive": 1, "negative": 1, "control": 3}
    ann.write_text(json.dumps({"text": "good", "label": 5}) + "\n")
    with pytest.raises(ValueError, match="needs both"):
        make_pools(cfg, _ctx(tmp_path / "q", "pools"))


def test_example_plan_shows_the_chain_with_annotation_flops(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "runner.cli", "plan", "experiments/exp13_datashop_pydoc.py",
                        "--prefix", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    plan = json.loads(r.stdout)
    kinds = [s["kind"] for s in plan["steps"]]
    for before, after in [("annotate", "fasttext_filter"), ("fasttext_filter", "train"), ("train", "eval")]:
        assert kinds.index(before) < kinds.index(after)
    annotate = next(s for s in plan["steps"] if s["kind"] == "annotate")
    trains = sum(s["model_flops"] for s in plan["steps"] if s["kind"] == "train")
    assert annotate["model_flops"] > 0 and plan["total_model_flops"] == pytest.approx(annotate["model_flops"] + trains)


def test_every_pool_document_gets_its_classifier_score(tmp_path: Path) -> None:
    from runner.datashop import ScoreConfig, score_pool
    from runner.steps.fasttext_filter import FastTextFilterConfig, train_classifier

    cooking = [f"fry the onions in oil and add salt step {i}" for i in range(20)]
    other = [f"the socket module opens a network connection {i}" for i in range(20)]
    ft = FastTextFilterConfig(positive="p", negative="n", corpus="c", keep_fraction=0.5, val_fraction=0.0, epoch=20)
    model, _ = train_classifier(cooking, other, ft, tmp_path)
    model.save_model(str(tmp_path / "model.bin"))
    corpus = tmp_path / "documents.jsonl"
    write_documents(str(corpus), ["fry onions in oil", "open a network socket"])
    stats = score_pool(ScoreConfig(classifier=str(tmp_path / "model.bin"), corpus=str(corpus)),
                       _ctx(tmp_path / "s", "scores"))
    rows = [json.loads(x) for x in (tmp_path / "s" / "documents.jsonl").read_text().splitlines()]
    assert stats["documents"] == 2 and rows[0]["datashop_score"] > 0.5 > rows[1]["datashop_score"]
