"""The token cache: documents -> token ids in tensorstore (zarr3), written once, on a local path or gs://.

Layout under ``<root>/<key>/`` where ``key`` hashes (source fingerprint, tokenizer, split, val fraction)::

    manifest.json        written last and atomically: the cache's "complete" marker
    <write-id>/tokens    zarr3 uint16/uint32, every document's tokens followed by the end-of-text id
    <write-id>/offsets   zarr3 int64, offsets[i] = first token of document i, offsets[-1] = total tokens

A writer puts its arrays under a fresh ``<write-id>`` and only then publishes the manifest that names it, so a
crashed or concurrent writer never leaves a half-written cache that looks complete (same on GCS, where the
manifest upload is a single atomic object write). The manifest records document, token and byte counts, the
source fingerprint and the sha256 of the text read.

Scale: a split is tokenized in memory and read back whole into host memory (fine up to a few hundred million
tokens per host); larger corpora want sharded, appending writes and windowed reads, which this layout allows
(offsets locate any document) but this version does not do.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from dataclasses import dataclass

import numpy as np
import tensorstore as ts
from pydantic import BaseModel, ConfigDict

from runner import store
from runner.config import DataSource
from runner.data.sources import describe, iter_documents, source_fingerprint
from runner.data.tokenizer import Tokenizer
from runner.errors import DataError

CACHE_VERSION = 1


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = CACHE_VERSION
    write_id: str
    source: str
    source_fingerprint: str
    content_sha256: str
    tokenizer: str
    split: str
    documents: int
    tokens: int
    bytes: int
    dtype: str
    max_document_tokens: int


@dataclass(frozen=True)
class TokenData:
    """One split, tokenized: a flat token stream plus document offsets and its manifest."""

    tokens: np.ndarray
    offsets: np.ndarray
    manifest: Manifest

    @property
    def fingerprint(self) -> str:
        return self.manifest.content_sha256


def default_cache_root() -> str:
    return os.environ.get("OPENLAB_CACHE_DIR") or os.path.expanduser("~/.cache/openlab/tokens")


def kvstore_url(url: str) -> str:
    """A tensorstore kvstore URL: ``gs://...`` as is, a local path as ``file://<absolute>`` (shared with checkpoints)."""
    return url if "://" in url else "file://" + os.path.abspath(url)


def _spec(url: str, dtype: str | None = None, n: int | None = None) -> dict:
    spec: dict = {"driver": "zarr3", "kvstore": kvstore_url(url)}
    if n is not None:
        chunk = max(1, min(n, 1 << 22))
        spec["metadata"] = {
            "shape": [n],
            "data_type": dtype,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [chunk]}},
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd"}],
        }
    return spec


def cache_key(src: DataSource, tok: Tokenizer, split: str, val_fraction: float) -> str:
    ident = [CACHE_VERSION, source_fingerprint(src), tok.fingerprint(), split, val_fraction]
    return hashlib.sha256(json.dumps(ident).encode()).hexdigest()[:24]


def load_or_build(
    src: DataSource, tok: Tokenizer, split: str, val_fraction: float, root: str | None = None
) -> TokenData:
    """The tokens of one split, from the cache when complete, else tokenized now and cached."""
    base = store.join(root or default_cache_root(), cache_key(src, tok, split, val_fraction))
    manifest = _read_manifest(store.join(base, "manifest.json"))
    if manifest is None:
        manifest = _build(src, tok, split, val_fraction, base)
    data = store.join(base, manifest.write_id)
    try:
        tokens = ts.open(_spec(store.join(data, "tokens"))).result().read().result()
        offsets = ts.open(_spec(store.join(data, "offsets"))).result().read().result()
    except Exception as err:
        raise DataError(f"token cache {base}: unreadable ({str(err).splitlines()[0]}); delete it to rebuild") from None
    if len(tokens) != manifest.tokens or len(offsets) != manifest.documents + 1:
        raise DataError(f"token cache {base}: arrays disagree with manifest.json; delete it to rebuild")
    return TokenData(tokens=tokens, offsets=offsets, manifest=manifest)


def _read_manifest(url: str) -> Manifest | None:
    try:
        if not store.exists(url):
            return None
        m = Manifest.model_validate_json(store.read_bytes(url))
    except Exception:
        return None  # an unreadable manifest means "not complete": rebuild beside it
    return m if m.version == CACHE_VERSION else None


def _build(src: DataSource, tok: Tokenizer, split: str, val_fraction: float, base: str) -> Manifest:
    sha = hashlib.sha256()
    chunks: list[np.ndarray] = []
    lengths: list[int] = []
    n_bytes = 0
    for text in iter_documents(src, split, val_fraction):
        raw = text.encode("utf-8", errors="replace")
        sha.update(len(raw).to_bytes(8, "little") + raw)
        n_bytes += len(raw)
        ids = np.asarray(tok.encode(text) + [tok.eos_id], dtype=np.int64)
        chunks.append(ids)
        lengths.append(len(ids))
    if not chunks:
        raise DataError(f"dataset {describe(src)}: split {split!r} has no documents")
    tokens = np.concatenate(chunks)
    dtype = "uint16" if tok.vocab_size <= 1 << 16 else "uint32"
    tokens = tokens.astype(dtype)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    write_id = uuid.uuid4().hex[:12]
    data = store.join(base, write_id)
    try:
        for name, arr in (("tokens", tokens), ("offsets", offsets)):
            out = ts.open(_spec(store.join(data, name), str(arr.dtype), len(arr)), create=True).result()
            out.write(arr).result()
    except Exception as err:
        raise DataError(f"token cache {base}: cannot write ({str(err).splitlines()[0]})") from None
    manifest = Manifest(
        write_id=write_id,
        source=describe(src),
        source_fingerprint=source_fingerprint(src),
        content_sha256=sha.hexdigest(),
        tokenizer=tok.fingerprint(),
        split=split,
        documents=len(lengths),
        tokens=int(len(tokens)),
        bytes=n_bytes,
        dtype=dtype,
        max_document_tokens=int(max(lengths)),
    )
    store.atomic_write_text(store.join(base, "manifest.json"), manifest.model_dump_json(indent=2))
    return manifest
