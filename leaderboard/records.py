"""Record history per speedrun track, from the lab's signed reproductions (``reproduction.json``, issue 14).

A record is a reproduction whose decision was *accepted* (``bot.runs.reproductions``: it reproduced and beat the
current record at its budget with a one-sided Welch test). Each track gets ``records/<track>.html``, a
world-record table like modded-nanogpt's: date, author (and affiliation, from the PR and its preregistration),
method, BPB ± 95% CI, FLOPs, Δ against the previous record, and links to the PR, the code at its SHA, W&B and
the execution; ``records/feed.xml`` has one Atom entry per record. Reproductions that were not accepted are
listed below each table with the reason. A document whose signature does not verify against the lab key is
marked *unsigned*, never silently trusted.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fsspec.core import url_to_fs

from runner.reproduction import REPRODUCTION_FILE, Reproduction, verify_reproduction


def discover_reproductions(sources: Iterable[str]) -> tuple[list[Reproduction], list[str]]:
    """Load every ``reproduction.json`` under the given globs or folders; (documents, warnings)."""
    docs: list[Reproduction] = []
    warnings: list[str] = []
    for src in sources:
        pattern = src if any(c in src for c in "*?[") else f"{src.rstrip('/')}/**/{REPRODUCTION_FILE}"
        fs, path = url_to_fs(pattern)
        for p in sorted(fs.glob(path)):
            try:
                docs.append(Reproduction.model_validate_json(fs.cat_file(p)))
            except (OSError, ValueError) as err:
                warnings.append(f"{p}: not a reproduction document: {str(err).splitlines()[0][:200]}")
    return docs, warnings


def history(docs: list[Reproduction], public_pem: bytes | None) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Per track: ``records`` (accepted, oldest first, with Δ vs the previous) and ``others`` (with reasons)."""
    key = None
    if public_pem:
        from runner.attest import load_public_key

        try:
            key = load_public_key(public_pem)
        except ValueError:
            key = None
    by_track: dict[str, list[Reproduction]] = defaultdict(list)
    for d in docs:
        by_track[d.track].append(d)
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for track, reps in sorted(by_track.items()):
        reps.sort(key=lambda r: r.created_at)
        records: list[dict[str, Any]] = []
        others: list[dict[str, Any]] = []
        prev: Reproduction | None = None
        for r in reps:
            row = _row(r, key)
            if r.record and r.record.accepted and r.summary:
                row["delta"] = r.summary.mean - prev.summary.mean if prev and prev.summary else None
                records.append(row)
                prev = r
            else:
                row["why"] = r.record.reason if r.record else r.verdict
                others.append(row)
        out[track] = {"records": records, "others": others}
    return out


def _row(r: Reproduction, key: Any) -> dict[str, Any]:
    s = r.summary
    return {
        "run_id": r.run_id, "date": r.created_at.strftime("%Y-%m-%d"), "updated": r.created_at.isoformat(),
        "author": r.author, "affiliation": r.affiliation, "method": r.name, "sha": r.sha,
        "mean": s.mean if s else None, "half": s.half_width if s else None, "std": s.std if s else None,
        "n": s.n if s else 0, "seeds": len(r.seeds), "flops": r.model_flops,
        "p": r.record.p_value if r.record else None, "links": {k: v for k, v in r.links.items()
                                                             if v.startswith(("https://", "http://"))},
        "signed": key is not None and verify_reproduction(r, key),
    }


def write_records(out: Path, docs: list[Reproduction], common: dict[str, Any], public_pem: bytes | None) -> int:
    """Write ``records/index.html``, one page per track and ``records/feed.xml``; returns the number of records."""
    from leaderboard.pages import environment

    tracks = history(docs, public_pem)
    env = environment()
    folder = out / "records"
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for track, h in list(tracks.items()):
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,48}", track):
            del tracks[track]  # a track name that cannot be a file name is no speedrun track
            continue
        n += len(h["records"])
        (folder / f"{track}.html").write_text(env.get_template("records.html.j2").render(
            **common, root="../", track=track, records=h["records"], others=h["others"], tracks=list(tracks)))
    (folder / "index.html").write_text(env.get_template("records.html.j2").render(
        **common, root="../", track=None, records=[], others=[], tracks=list(tracks)))
    entries = sorted((dict(r, track=t) for t, h in tracks.items() for r in h["records"]),
                     key=lambda r: r["updated"], reverse=True)
    (folder / "feed.xml").write_text(env.get_template("records_feed.xml.j2").render(
        **common, entries=entries, updated=entries[0]["updated"] if entries else common["built_at"]))
    return n
