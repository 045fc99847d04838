"""The builtin offline corpus: CPython's own reference docs (``pydoc_data.topics``).

Every Python install ships this text, so tests, the demo and the tiny speedrun need no network. The slice is
*fixed*: all topics sorted by key, verified against a sha256 so a different Python release (whose docs differ)
fails loudly instead of silently moving the val BPB of the leaderboard. The train/val split is by topic key
(a salted hash of the key), fixed independently of ``data.val_fraction`` so every run scores on the same
held-out text: 8 topics, 52,891 UTF-8 bytes of val, 413,226 of train.
"""

from __future__ import annotations

import hashlib
import json
import sys

from runner.errors import DataError

PYDOC_SHA256 = "84d0d8f9ad666e4fd7881a485c21bdfaded1a0f159ce2b56cba38c1cb5927b0d"
_SPLIT_SALT = "openlab-pydoc-v3"
_VAL_FRACTION = 0.1


def _is_val(key: str) -> bool:
    h = hashlib.sha256(f"{_SPLIT_SALT}:{key}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64 < _VAL_FRACTION


def pydoc_topics() -> list[tuple[str, str]]:
    """All (key, text) pairs, sorted by key, after checking the sha256 of the whole slice."""
    from pydoc_data.topics import topics

    pairs = [(k, topics[k]) for k in sorted(topics)]
    blob = json.dumps([list(p) for p in pairs], ensure_ascii=False).encode()
    digest = hashlib.sha256(blob).hexdigest()
    if digest != PYDOC_SHA256:
        raise DataError(
            f"builtin corpus 'pydoc': pydoc_data.topics of Python {sys.version.split()[0]} has sha256 "
            f"{digest[:12]}..., expected {PYDOC_SHA256[:12]}... (the corpus is pinned to Python 3.11.7's docs); "
            "use data.source.paths with a local copy instead"
        )
    return pairs


def builtin_documents(name: str, split: str) -> list[str]:
    """Documents of a builtin corpus split ("train" or "val")."""
    if name != "pydoc":
        raise DataError(f"data.source.builtin: unknown corpus {name!r} (known: pydoc)")
    want_val = split == "val"
    return [text for key, text in pydoc_topics() if _is_val(key) == want_val]
