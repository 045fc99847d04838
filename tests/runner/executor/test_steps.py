"""Step kinds without Ray: fastText filter, ingest, the lm-eval adapter (with and without the harness)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from runner.config import DataSource, ModelConfig
from runner.executor import StepContext
from runner.steps.documents import read_documents, write_documents
from runner.steps.fasttext_filter import FastTextFilterConfig, run_fasttext_filter, select
from runner.steps.ingest import IngestConfig, run_ingest


def _ctx(out: Path) -> StepContext:
    return StepContext("t", "v1", str(out), "run", {})


def test_fasttext_filter_keeps_the_clean_half(tmp_path: Path) -> None:
    import random

    rng = random.Random(0)
    clean = [
        f"the function {w} returns a list of values computed from the argument" for w in "abcdefghij" * 6
    ]
    junk = [
        " ".join(rng.choice(["BUY", "NOW", "free!!!", "$$$", "click"]) for _ in range(12)) for _ in range(60)
    ]
    for name, docs in {"pos": clean[:30], "neg": junk[:30], "corpus": clean[30:] + junk[30:]}.items():
        write_documents(str(tmp_path / name / "documents.jsonl"), docs)
    cfg = FastTextFilterConfig(
        positive=str(tmp_path / "pos/documents.jsonl"),
        negative=str(tmp_path / "neg/documents.jsonl"),
        corpus=str(tmp_path / "corpus/documents.jsonl"),
        keep_fraction=0.5,
        epoch=10,
    )
    stats = run_fasttext_filter(cfg, _ctx(tmp_path / "out"))
    kept = read_documents(str(tmp_path / "out/documents.jsonl"))
    assert stats["kept_documents"] == len(kept) == 30
    assert sum(k in clean for k in kept) >= 27
    assert (tmp_path / "out/model.bin").stat().st_size > 0
    rows = [json.loads(x) for x in (tmp_path / "out/documents.jsonl").read_text().splitlines()]
    assert all(0 <= r["score"] <= 1 for r in rows)


def test_select_by_fraction_or_threshold() -> None:
    assert select([0.1, 0.9, 0.5, 0.9], 0.5, None) == ([1, 3], 0.9)
    assert select([0.1, 0.9, 0.5], None, 0.4) == ([1, 2], 0.4)
    with pytest.raises(ValueError, match="exactly one"):
        FastTextFilterConfig(positive="a", negative="b", corpus="c")


def test_ingest_local_files(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps({"body": f"doc {i}"}) for i in range(5)) + "\n")
    cfg = IngestConfig(source=DataSource(paths=[str(src)], text_field="body"), max_documents=3)
    assert run_ingest(cfg, _ctx(tmp_path / "out")) == {"documents": 3, "chars": 15}
    assert read_documents(str(tmp_path / "out/documents.jsonl")) == ["doc 0", "doc 1", "doc 2"]


@pytest.fixture(scope="module")
def tiny_lm():  # type: ignore[no-untyped-def]
    import jax

    from runner.data import ByteTokenizer
    from runner.model import init_params
    from runner.steps.lm_eval_adapter import JaxScorer, OpenlabLM

    cfg = ModelConfig(
        hidden_dim=32, intermediate_dim=64, num_layers=1, num_heads=2, num_kv_heads=1, seq_len=16,
        vocab_size=264, compute_dtype="float32",
    )  # fmt: skip
    params = init_params(cfg, jax.random.PRNGKey(0))
    tok = ByteTokenizer()
    return OpenlabLM(JaxScorer(params, cfg), tok, eot_id=tok.eos_id, max_gen_toks=5), params, cfg


def _req(*args: object) -> SimpleNamespace:
    return SimpleNamespace(args=args)


def test_adapter_matches_the_trainers_loss(tiny_lm) -> None:  # type: ignore[no-untyped-def]
    from runner.model import token_nats

    lm, params, cfg = tiny_lm
    ctx, cont = "def f(x):", " return"
    ids = [256, *ctx.encode(), *cont.encode()]
    nats, _ = token_nats(params, cfg, np.asarray([ids], dtype=np.int32))
    expected = -float(np.asarray(nats)[0, -len(cont) :].sum())
    [(ll, greedy)] = lm.loglikelihood([_req(ctx, cont)])
    assert ll == pytest.approx(expected, rel=1e-5) and isinstance(greedy, bool)

    text = "a longer text than one window of sixteen bytes"
    [rolling] = lm.loglikelihood_rolling([_req(text)])
    full = [256, *text.encode()]
    by_window = 0.0
    for s in range(0, len(full) - 1, 16):
        w = full[s : s + 17]
        by_window -= float(np.asarray(token_nats(params, cfg, np.asarray([w], dtype=np.int32))[0]).sum())
    assert rolling == pytest.approx(by_window, rel=1e-5)


def test_adapter_generation_stops_and_truncates(tiny_lm) -> None:  # type: ignore[no-untyped-def]
    lm, _, _ = tiny_lm
    [free] = lm.generate_until([_req("hello", {"until": [], "max_gen_toks": 4})])
    assert len(free.encode()) <= 4
    if free:
        [cut] = lm.generate_until([_req("hello", {"until": [free[-1]], "max_gen_toks": 4})])
        assert free[-1] not in cut


def test_lm_eval_harness_on_a_local_json_task(tiny_lm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lm_eval = pytest.importorskip("lm_eval")
    from lm_eval.tasks import TaskManager

    data = tmp_path / "qa.jsonl"
    rows = [
        {"question": f"{i} plus one is", "choices": [f" {i + 1}", f" {i + 5}"], "label": 0} for i in range(4)
    ]
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "tiny_qa.yaml").write_text(
        "task: tiny_qa\ndataset_path: json\n"
        f"dataset_kwargs:\n  data_files:\n    test: {data}\n"
        "test_split: test\noutput_type: multiple_choice\n"
        'doc_to_text: "{{question}}"\ndoc_to_choice: "{{choices}}"\ndoc_to_target: "{{label}}"\n'
        "metric_list:\n  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n"
    )
    lm, _, _ = tiny_lm
    res = lm_eval.simple_evaluate(
        model=lm, tasks=["tiny_qa"], task_manager=TaskManager(include_path=str(tmp_path))
    )
    acc = res["results"]["tiny_qa"]["acc,none"]
    assert 0.0 <= acc <= 1.0
