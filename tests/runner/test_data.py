"""Data: builtin corpus, local sources, tokenizers, the tensorstore cache and deterministic batches."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from runner.config import DataConfig, DataSource
from runner.data import (
    Batches,
    ByteTokenizer,
    builtin_documents,
    eval_windows,
    load_split,
    load_tokenizer,
    permute,
)
from runner.errors import DataError


def test_permutation_is_a_bijection_keyed_by_seed_and_epoch() -> None:
    for n in (1, 2, 7, 1000, 1025):
        p = permute(np.arange(n), n, seed=3, epoch=0)
        assert sorted(p.tolist()) == list(range(n))
    a, b, c = (permute(np.arange(500), 500, s, e) for s, e in ((0, 0), (1, 0), (0, 1)))
    assert not np.array_equal(a, b) and not np.array_equal(a, c)
    assert np.array_equal(a, permute(np.arange(500), 500, 0, 0))


def test_builtin_split_is_fixed_and_disjoint() -> None:
    train, val = builtin_documents("pydoc", "train"), builtin_documents("pydoc", "val")
    assert len(train) == 71 and len(val) == 8
    assert not set(train) & set(val)
    assert sum(len(t.encode()) for t in val) == 52_891


def test_cache_is_written_once_with_manifest(cache_dir: Path) -> None:
    a = load_split(DataConfig(), "train")
    b = load_split(DataConfig(), "train")
    assert a.manifest.write_id == b.manifest.write_id  # second call read the cache
    m = a.manifest
    assert (m.documents, m.bytes, m.tokens) == (71, 413_226, 413_226 + 71)
    manifests = list(cache_dir.glob("*/manifest.json"))
    assert any(json.loads(p.read_text())["write_id"] == m.write_id for p in manifests)
    assert (a.offsets[1:] - a.offsets[:-1]).max() == m.max_document_tokens
    assert (a.tokens[a.offsets[1:] - 1] == ByteTokenizer().eos_id).all()


def test_batches_are_pure_functions_of_seed_and_step() -> None:
    data = load_split(DataConfig(), "train")
    b1, b2 = Batches(data, 64, 4, seed=0), Batches(data, 64, 4, seed=0)
    assert np.array_equal(b1.batch(123), b2.batch(123))
    assert not np.array_equal(b1.batch(0), Batches(data, 64, 4, seed=1).batch(0))
    x = b1.batch(5)
    assert x.shape == (4, 65) and x.dtype == np.int32
    # A window continues the token stream: row r is tokens[start : start + 65].
    start = int(b1.indices(5)[0]) * 64
    assert np.array_equal(x[0], data.tokens[start : start + 65])
    # One epoch visits every window exactly once.
    small = Batches(data, 4096, 1, seed=0)
    seen = np.concatenate([small.indices(i) for i in range(small.windows)])
    assert sorted(seen.tolist()) == list(range(small.windows))


def test_local_jsonl_txt_parquet(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs = [f"document number {i} " * 20 for i in range(40)]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs[:20]))
    pq.write_table(pa.table({"text": docs[20:39]}), tmp_path / "b.parquet")
    (tmp_path / "c.txt").write_text(docs[39])
    src = DataSource(paths=[str(tmp_path / "*.jsonl"), str(tmp_path / "b.parquet"), str(tmp_path / "c.txt")])
    cfg = DataConfig(source=src, val_fraction=0.2)
    train, val = load_split(cfg, "train"), load_split(cfg, "val")
    assert train.manifest.documents + val.manifest.documents == 40
    assert train.manifest.bytes + val.manifest.bytes == sum(len(d) for d in docs)
    assert val.manifest.documents > 0


def test_empty_and_missing_datasets_fail_clearly(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(DataError, match="has no documents"):
        load_split(DataConfig(source=DataSource(paths=[str(tmp_path / "empty.jsonl")])), "train")
    with pytest.raises(DataError, match="nope.jsonl: no such file"):
        load_split(DataConfig(source=DataSource(paths=[str(tmp_path / "nope.jsonl")])), "train")
    (tmp_path / "bad.jsonl").write_text('{"text": "ok"}\n{"txt": 1}\n')
    with pytest.raises(DataError, match=r"bad.jsonl:2: expected an object with a string field 'text'"):
        load_split(DataConfig(source=DataSource(paths=[str(tmp_path / "bad.jsonl")])), "train")


def test_seq_len_longer_than_every_document(tmp_path: Path) -> None:
    (tmp_path / "short.jsonl").write_text("".join(json.dumps({"text": "tiny doc"}) + "\n" for _ in range(50)))
    data = load_split(DataConfig(source=DataSource(paths=[str(tmp_path / "short.jsonl")])), "all")
    with pytest.raises(DataError, match="seq_len: 64 is longer than every document"):
        Batches(data, 64, 2, 0)
    with pytest.raises(DataError, match="longer than the whole"):
        Batches(data, 10_000, 2, 0)


def test_eval_windows_cover_every_target_once() -> None:
    data = load_split(DataConfig(), "val")
    w, valid = eval_windows(data, 100)
    assert valid.sum() == data.manifest.tokens - 1
    flat = w[:, 1:][valid]
    assert np.array_equal(flat, data.tokens[1:])


def test_hf_tokenizer_token_bytes_are_exact(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    docs = builtin_documents("pydoc", "val")
    tok.train_from_iterator(docs, trainer)
    path = tmp_path / "tok.json"
    tok.save(str(path))
    t = load_tokenizer(str(path))
    tb = t.token_bytes()
    assert tb[t.eos_id] == 0
    text = "héllo wörld — ünïcode ✓ " + docs[0][:2000]
    ids = t.encode(text)
    assert int(tb[ids].sum()) == len(text.encode("utf-8"))
    with pytest.raises(DataError, match="no such tokenizer file"):
        load_tokenizer(str(tmp_path / "missing.json"))


def test_hf_dataset_streams_and_fails_clearly(tmp_path: Path) -> None:
    """The Hugging Face path (datasets streaming) on a local dataset folder; the Hub is offline in tests."""
    from runner.config import HFSource

    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "train.jsonl").write_text("".join(json.dumps({"text": f"doc {i} " * 30}) + "\n" for i in range(30)))
    src = DataSource(hf=HFSource(name=str(tmp_path / "ds"), revision="v0", max_documents=25))
    data = load_split(DataConfig(source=src), "all")
    assert data.manifest.documents == 25 and data.manifest.source == f"hf:{tmp_path / 'ds'}@v0"
    missing = DataSource(hf=HFSource(name="allenai/c4", revision="1588ec4"))
    with pytest.raises(DataError, match="cannot stream allenai/c4@1588ec4"):
        load_split(DataConfig(source=missing), "train")
