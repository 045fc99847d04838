"""The index page's data (``data/table.json``): compact enough for 10,000 runs to load at once in a browser."""

from __future__ import annotations

from typing import Any

from leaderboard.rows import Row
from leaderboard.tracks import Tracks


class _Prefixes:
    """Dictionary-encodes URLs as [prefix index, rest] so 10,000 W&B links do not repeat their host."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def encode(self, url: str | None) -> list[Any] | None:
        if url is None:
            return None
        head, _, tail = url.rpartition("/")
        i = self.index.setdefault(head + "/", len(self.index))
        return [i, tail]


def _num(v: float | None) -> float | None:
    return None if v is None else float(f"{v:.4g}")


def index_table(rows: list[Row], tracks: Tracks, ranked: dict[str, list[Row]], frontiers: dict[str, dict]) -> dict:
    """``data/table.json`` (inlined in the index when small): each run as a positional row (the order app.js
    reads), authors and URL prefixes dictionary-encoded, and per track its members in rank order, its frontier
    per FLOPs axis and its BPB band."""
    pos = {r.index: i for i, r in enumerate(rows)}
    authors: dict[tuple, int] = {}
    prefixes = _Prefixes()
    data = []
    for r in rows:
        a = authors.setdefault(r.author, len(authors)) if r.author else -1
        data.append(
            [
                r.run_id,
                r.name,
                None if r.slug == r.run_id else r.slug,
                a,
                r.date,
                r.params,
                r.tokens,
                None if r.seconds is None else round(r.seconds, 1),
                _num(r.model_flops),
                _num(r.hardware_flops),
                None if r.mfu is None else round(r.mfu, 4),
                r.bpb,
                prefixes.encode(r.wandb),
                prefixes.encode(r.code),
                r.verification,
            ]
        )
    return {
        "version": 1,
        "authors": [list(a) for a in authors],
        "prefixes": list(prefixes.index),
        "rows": data,
        "tracks": [
            {
                "id": t.id,
                "members": [pos[r.index] for r in ranked[t.id]],
                "frontier": {ax: [pos[r.index] for r in fr] for ax, fr in frontiers[t.id].items()},
                "band": list(tracks.bpb_band(t)) if t.kind == "bpb_threshold" else None,
            }
            for t in tracks
        ],
    }
