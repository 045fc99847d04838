"""Where documents come from: the builtin corpus, local jsonl/parquet/txt files, or a Hugging Face dataset.

A source yields plain strings (documents) in a fixed order. Local files and HF datasets are split train/val by
a hash of each document's text, so the split is stable under reordering and needs no extra pass. Each source
also has a *fingerprint* that keys the token cache: the builtin corpus by its sha256, local files by path,
size and mtime (their content sha256 is recorded in the manifest), an HF dataset by name, config and revision.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from collections.abc import Iterator

from runner.config import DataSource
from runner.data.corpus import PYDOC_SHA256, builtin_documents
from runner.errors import DataError

Split = str  # "train" | "val" | "all"


def source_fingerprint(src: DataSource) -> str:
    if src.builtin is not None:
        ident: object = {"builtin": src.builtin, "sha256": PYDOC_SHA256}
    elif src.paths is not None:
        files = expand_paths(src.paths)
        ident = {
            "paths": [[f, os.stat(f).st_size, os.stat(f).st_mtime_ns] for f in files],
            "text_field": src.text_field,
        }
    else:
        assert src.hf is not None
        ident = {"hf": src.hf.model_dump(mode="json")}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()


def expand_paths(patterns: list[str]) -> list[str]:
    files: list[str] = []
    for pat in patterns:
        hits = sorted(glob.glob(os.path.expanduser(pat), recursive=True))
        hits = [h for h in hits if os.path.isfile(h)]
        if not hits:
            raise DataError(f"data.source.paths: {pat}: no such file")
        files.extend(os.path.abspath(h) for h in hits)
    return files


def _in_val(text: str, val_fraction: float) -> bool:
    h = hashlib.sha256(text.encode("utf-8", errors="replace")).digest()
    return int.from_bytes(h[:8], "big") / 2**64 < val_fraction


def iter_documents(src: DataSource, split: Split, val_fraction: float) -> Iterator[str]:
    """Non-empty documents of ``split``: 'train', 'val' (held out) or 'all'."""
    if src.builtin is not None:
        if split == "all":
            yield from builtin_documents(src.builtin, "train")
            yield from builtin_documents(src.builtin, "val")
        else:
            yield from builtin_documents(src.builtin, split)
        return
    raw = _iter_files(src) if src.paths is not None else _iter_hf(src)
    for text in raw:
        if not text:
            continue
        if split == "all" or _in_val(text, val_fraction) == (split == "val"):
            yield text


def _iter_files(src: DataSource) -> Iterator[str]:
    assert src.paths is not None
    for f in expand_paths(src.paths):
        yield from _read_file(f, src.text_field)


def _read_file(path: str, field: str) -> Iterator[str]:
    name = path.lower()
    if name.endswith((".jsonl", ".jsonl.gz", ".jsonl.zst", ".json")):
        yield from _read_jsonl(path, field)
    elif name.endswith(".parquet"):
        yield from _read_parquet(path, field)
    elif name.endswith((".txt", ".md", ".txt.gz")):
        with _open_text(path) as f:
            yield f.read()
    else:
        raise DataError(f"data.source.paths: {path}: unsupported file type (use .jsonl, .parquet or .txt)")


def _open_text(path: str):  # type: ignore[no-untyped-def]
    import fsspec

    return fsspec.open(path, "rt", encoding="utf-8", compression="infer").open()


def _read_jsonl(path: str, field: str) -> Iterator[str]:
    with _open_text(path) as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{path}:{lineno}: not valid JSON: {err.msg}") from None
            if not isinstance(rec, dict) or not isinstance(rec.get(field), str):
                raise DataError(f"{path}:{lineno}: expected an object with a string field {field!r}")
            yield rec[field]


def _read_parquet(path: str, field: str) -> Iterator[str]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as err:
        raise DataError(f"{path}: not a readable parquet file: {err}") from None
    if field not in pf.schema_arrow.names:
        raise DataError(f"{path}: no column {field!r} (columns: {', '.join(pf.schema_arrow.names)})")
    for batch in pf.iter_batches(columns=[field]):
        for v in batch.column(0).to_pylist():
            if isinstance(v, str):
                yield v


def _iter_hf(src: DataSource) -> Iterator[str]:
    """Stream an HF dataset pinned to a revision; network and auth come from the usual HF environment."""
    assert src.hf is not None
    hf = src.hf
    try:
        import datasets

        ds = datasets.load_dataset(hf.name, hf.config, split=hf.split, revision=hf.revision, streaming=True)
        for n, rec in enumerate(ds):
            if hf.max_documents is not None and n >= hf.max_documents:
                break
            text = rec.get(hf.text_field)
            if not isinstance(text, str):
                raise DataError(f"data.source.hf: {hf.name}: record {n} has no string field {hf.text_field!r}")
            yield text
    except DataError:
        raise
    except Exception as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise DataError(f"data.source.hf: cannot stream {hf.name}@{hf.revision}: {first}") from None


def describe(src: DataSource) -> str:
    if src.builtin is not None:
        return f"builtin:{src.builtin}"
    if src.paths is not None:
        return ",".join(src.paths)
    assert src.hf is not None
    return f"hf:{src.hf.name}@{src.hf.revision}"


