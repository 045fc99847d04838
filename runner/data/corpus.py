"""The builtin offline corpus: CPython's own reference docs (``pydoc_data.topics`` of Python 3.11.7).

Every Python install ships this kind of text, but each release ships a different version of it, so the slice
is *fixed* by shipping it with the package: ``pydoc_topics.json.gz`` holds all topics of Python 3.11.7's
``pydoc_data.topics`` sorted by key (PSF-licensed documentation), verified against a sha256 on load, so the
val BPB of the leaderboard means the same thing on any Python 3.11+ and no network is ever needed. The train/val split is by topic key
(a salted hash of the key), fixed independently of ``data.val_fraction`` so every run scores on the same
held-out text: 8 topics, 52,891 UTF-8 bytes of val, 413,226 of train.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from functools import lru_cache
from pathlib import Path

from runner.errors import DataError

PYDOC_SHA256 = "84d0d8f9ad666e4fd7881a485c21bdfaded1a0f159ce2b56cba38c1cb5927b0d"
_SPLIT_SALT = "openlab-pydoc-v3"
_VAL_FRACTION = 0.1


def _is_val(key: str) -> bool:
    h = hashlib.sha256(f"{_SPLIT_SALT}:{key}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64 < _VAL_FRACTION


PYDOC_FILE = Path(__file__).with_name("pydoc_topics.json.gz")


@lru_cache(maxsize=1)
def pydoc_topics() -> list[tuple[str, str]]:
    """All (key, text) pairs, sorted by key, after checking the sha256 of the whole slice."""
    try:
        blob = gzip.decompress(PYDOC_FILE.read_bytes())
    except (OSError, EOFError) as err:
        raise DataError(f"builtin corpus 'pydoc': cannot read {PYDOC_FILE}: {err}") from None
    digest = hashlib.sha256(blob).hexdigest()
    if digest != PYDOC_SHA256:
        raise DataError(
            f"builtin corpus 'pydoc': {PYDOC_FILE.name} has sha256 {digest[:12]}..., expected "
            f"{PYDOC_SHA256[:12]}...: the packaged corpus is damaged; reinstall openlab"
        )
    return [(k, v) for k, v in json.loads(blob)]


def builtin_documents(name: str, split: str) -> list[str]:
    """Documents of a builtin corpus split ("train" or "val")."""
    if name != "pydoc":
        raise DataError(f"data.source.builtin: unknown corpus {name!r} (known: pydoc)")
    want_val = split == "val"
    return [text for key, text in pydoc_topics() if _is_val(key) == want_val]
