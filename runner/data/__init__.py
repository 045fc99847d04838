"""Data: documents -> tokenizer -> tensorstore token cache -> deterministic batches.

Public entry points (stable; the executor and the bot call them):

- :func:`load_split` ``(data: DataConfig, split: str, *, source: DataSource | None = None,
  tokenizer: Tokenizer | None = None) -> TokenData``: one split ('train', 'val' or 'all') tokenized, from the
  cache when complete.
- :func:`load_tokenizer` ``(spec: str) -> Tokenizer``: 'byte' or a tokenizers JSON path.
- :class:`Batches` ``(data, seq_len, batch_size, seed).batch(step) -> np.ndarray`` (batch, seq_len + 1) int32.
- :func:`eval_windows` ``(data, seq_len, max_tokens=None) -> (windows, valid)``.
"""

from __future__ import annotations

from runner.config import DataConfig, DataSource
from runner.data.batches import Batches, eval_windows, permute
from runner.data.cache import Manifest, TokenData, default_cache_root, load_or_build
from runner.data.corpus import builtin_documents
from runner.data.sources import iter_documents, source_fingerprint
from runner.data.tokenizer import ByteTokenizer, HFTokenizer, Tokenizer, load_tokenizer


def load_split(
    data: DataConfig,
    split: str,
    *,
    source: DataSource | None = None,
    tokenizer: Tokenizer | None = None,
) -> TokenData:
    """Tokens of ``split`` of ``source`` (default: the config's train source), cached under data.cache_dir."""
    tok = tokenizer or load_tokenizer(data.tokenizer)
    return load_or_build(source or data.source, tok, split, data.val_fraction, data.cache_dir)


__all__ = [
    "Batches",
    "ByteTokenizer",
    "HFTokenizer",
    "Manifest",
    "TokenData",
    "Tokenizer",
    "builtin_documents",
    "default_cache_root",
    "eval_windows",
    "iter_documents",
    "load_split",
    "load_tokenizer",
    "permute",
    "source_fingerprint",
]
