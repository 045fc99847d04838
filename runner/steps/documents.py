"""Documents on storage: one JSON object per line with a ``text`` field (``documents.jsonl``).

The format every text step reads and writes, and one the trainer reads directly (``DataSource(paths=[...])``).
Writes are atomic, so a step killed mid-write never leaves a truncated file under the real name.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from runner import store

DOCUMENTS = "documents.jsonl"


def write_documents(url: str, docs: Iterable[str], extra: Iterable[dict] | None = None) -> int:
    lines = []
    extras = iter(extra) if extra is not None else None
    for text in docs:
        row = {"text": text}
        if extras is not None:
            row.update(next(extras))
        lines.append(json.dumps(row, ensure_ascii=False))
    store.atomic_write_text(url, "\n".join(lines) + ("\n" if lines else ""))
    return len(lines)


def read_documents(url: str, field: str = "text") -> list[str]:
    out = []
    for n, line in enumerate(store.read_text(url).splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line)[field])
        except (ValueError, KeyError, TypeError):
            from runner.errors import DataError

            raise DataError(f"{url}:{n}: expected a JSON object with a {field!r} field") from None
    return out
