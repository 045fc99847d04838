"""Build the static site: load, rank, fit, render, and swap the finished folder into place.

Output (relative links only, so GitHub Pages serves the folder as is)::

    index.html  style.css  app.js  feed.xml  runs.json  data/table.json
    runs/<slug>.html                     one page per run
    tracks/<track id>/frontier.json      the track's Pareto frontier on both FLOPs axes

The site is written to a temporary folder beside ``out`` and renamed over it at the end, so a reader (or
``serve``) never sees half a build. Parsing and run pages are spread over worker processes (see
:mod:`leaderboard.workers`); everything global (duplicates, ranks, frontiers, fits) happens here.
"""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from itertools import compress
from operator import itemgetter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from leaderboard import workers
from leaderboard.frontier import flops_order, frontier_for, in_track, pareto_order, rank_key
from leaderboard.load import discover, duplicate_warning, pick_original
from leaderboard.pages import environment, templates_dir
from leaderboard.rows import Row
from leaderboard.safe_json import markup_safe, script_json
from leaderboard.scaling import fit_power_law
from leaderboard.table import index_table
from leaderboard.tracks import FrontierRule, Track, Tracks
from runner import attest

COLUMNS = [
    ("rank", "#", True),
    ("name", "Run", False),
    ("author", "Author", False),
    ("date", "Date", False),
    ("params", "Params", True),
    ("tokens", "Tokens", True),
    ("seconds", "Time", True),
    ("model_flops", "Model FLOPs", True),
    ("hardware_flops", "HW FLOPs", True),
    ("mfu", "MFU", True),
    ("bpb", "BPB", True),
    ("wandb", "W&B", False),
    ("verification", "Status", False),
]
FEED_SIZE = 50
# Up to this size the table is also inlined in index.html, so the page works opened as a file (file://),
# where browsers refuse fetch(); a bigger table stays out of the page to keep first paint fast.
EMBED_MAX_BYTES = 2_000_000


class BuildOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sources: list[str]
    out: Path
    tracks: Tracks
    public_pem: bytes | None = None
    repo_url: str | None = None
    site_title: str = "openlab speedrun"
    page_size: int = 50
    workers: int | None = None
    reproductions: list[str] = []  # globs/folders of the lab's reproduction.json files: the record pages


class BuildReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    out: str
    files: int
    runs: int
    warnings: list[str]
    seconds: float
    index_bytes: int
    table_bytes: int


def _folder_in_repo(sources: list[str]) -> bool:
    """Run folders are repo paths (usable in code links) only for local globs or folders inside the cwd."""
    return all("://" not in s or s.startswith("file://") for s in sources)


def _dedupe(rows: list[Row], sources: dict[int, str], warnings: list[str]) -> list[Row]:
    """One row per run id: its original (a verified file beats copies wherever they sit); the rest reported."""
    groups: dict[str, list[Row]] = {}
    for row in sorted(rows, key=lambda r: r.index):
        groups.setdefault(row.run_id, []).append(row)
    keep = []
    for run_id, group in groups.items():
        best = pick_original([(r.index, r.verification) for r in group])
        keep += [r for r in group if r.index == best]
        shown = f"{sources[best]}, {next(r.verification for r in group if r.index == best)}"
        warnings += [duplicate_warning(sources[r.index], run_id, shown) for r in group if r.index != best]
    return sorted(keep, key=lambda r: r.index)


def _rank_tracks(rows: list[Row], tracks: Tracks) -> dict[str, list[Row]]:
    # rank_key depends only on whether the track ranks by FLOPs and on its axis, and run ids are unique here,
    # so all runs are sorted once per such pair and each track keeps its members in that order.
    orders: dict[tuple[bool, str], list[Row]] = {}
    out = {}
    for t in tracks:
        key = (t.kind == "bpb_threshold" and t.rank_by == "flops", t.flops_axis)
        if key not in orders:
            orders[key] = sorted(rows, key=lambda r, t=t: rank_key(r, t))
        band = tracks.bpb_band(t) if t.kind == "bpb_threshold" else None
        if t.kind == "all":
            out[t.id] = list(orders[key])
        else:
            out[t.id] = [r for r in orders[key] if in_track(r, t, tracks, r.folder, band)]
    return out


def _scaling_groups(track: Track, members: list[Row]) -> list[dict[str, Any]]:
    from leaderboard.frontier import flops_of, scaling_group

    groups: dict[str, list[Row]] = defaultdict(list)
    for r in members:
        g = scaling_group(r.folder, track)
        if g is not None:
            groups[g].append(r)
    out = []
    for name, rs in groups.items():
        if len(rs) < track.min_runs:
            continue
        if track.min_hardware_flops is not None and not any(
            (r.hardware_flops or 0) > track.min_hardware_flops for r in rs
        ):
            continue  # Marin's site lists a scaling group only past its cut-off (MIN_SCALING_LEADERBOARD_FLOPS)
        pts = [(f, r.bpb) for r in rs if (f := flops_of(r, track.flops_axis)) is not None]
        fit = fit_power_law([p[0] for p in pts], [p[1] for p in pts])
        authors = sorted({r.author[0] for r in rs if r.author})
        out.append(
            {
                "name": name,
                "n": len(rs),
                "authors": ", ".join(authors[:3]) + (" …" if len(authors) > 3 else ""),
                "date": max(r.date for r in rs),
                "fit": fit,
                "projected": fit.predict(track.projection_flops) if fit else None,
                "poor": fit is None or fit.r2 < track.min_r2,
            }
        )
    out.sort(
        key=lambda g: (g["poor"], g["projected"] if g["projected"] is not None else float("inf"), g["name"])
    )
    return out


def _frontiers(
    rows: list[Row], ranked: dict[str, list[Row]], rules: dict[str, FrontierRule] | None = None
) -> dict[str, dict[str, list[Row]]]:
    """Each track's frontier on both axes under its rule: one sort of all runs per (axis, rule), one scan
    per track. ``rows`` are in file order, which is the input order Marin's rule breaks FLOPs ties by."""
    rules = rules or {}
    out: dict[str, dict[str, list[Row]]] = {tid: {} for tid in ranked}
    size = max((r.index for r in rows), default=0) + 1
    masks = {}
    for tid, members in ranked.items():
        masks[tid] = mask = bytearray(size)
        for r in members:
            mask[r.index] = 1
    for ax in ("model_flops", "hardware_flops"):
        for rule in sorted({rules.get(tid, "marin") for tid in masks}):
            order = flops_order(rows, ax) if rule == "marin" else pareto_order(rows, ax)  # type: ignore[arg-type]
            pick = _picker([r.index for r in order])
            for tid, mask in masks.items():
                if rules.get(tid, "marin") != rule:
                    continue
                members_in_order = list(compress(order, pick(mask)))
                out[tid][ax] = frontier_for(members_in_order, ax, rule)  # type: ignore[arg-type]
    return out


def _picker(positions: list[int]) -> Callable[[bytearray], Iterable[int]]:
    """mask -> the mask's values at ``positions`` (in C for the usual many positions)."""
    if len(positions) < 2:
        return lambda mask: [mask[i] for i in positions]
    return itemgetter(*positions)


def _frontier_json(track: Track, fr: dict[str, list[Row]]) -> str:
    import json

    def item(r: Row) -> dict[str, Any]:
        return {
            "run_id": r.run_id,
            "name": r.name,
            "bpb": r.bpb,
            "model_flops": r.model_flops,
            "hardware_flops": r.hardware_flops,
            "finished_at": r.finished_at,
            "page": f"runs/{r.slug}.html",
        }

    body = {"track": track.model_dump(mode="json"), **{ax: [item(r) for r in rs] for ax, rs in fr.items()}}
    return markup_safe(json.dumps(body, indent=1, allow_nan=False) + "\n")


def _write(path: Path, text: str) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    path.write_bytes(data)
    return len(data)


def _write_runs_json(path: Path, parts: list[bytes]) -> None:
    """``[`` + every accepted run's schema JSON (workers' shares, in file order) joined by ``,\\n`` + ``]``."""
    chunks = [b"["]
    for part in (p for p in parts if p):
        chunks += [b",\n", part] if len(chunks) > 1 else [part]
    chunks.append(b"]\n")
    path.write_bytes(b"".join(chunks))


def _swap_into_place(tmp: Path, out: Path) -> None:
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        os.replace(out, old)
    os.replace(tmp, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def build_site(opts: BuildOptions) -> BuildReport:
    """Build the whole site into ``opts.out``. Bad inputs become warnings; the build itself does not fail."""
    t0 = time.perf_counter()
    # Tens of thousands of long-lived objects: generational GC passes would cost more than they free.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _build(opts, t0)
    finally:
        if was_enabled:
            gc.enable()


def _build(opts: BuildOptions, t0: float) -> BuildReport:
    found, warnings = discover(opts.sources)
    out = opts.out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.build-", dir=out.parent))
    try:
        report = _build_into(tmp, found, warnings, opts, t0)
        _swap_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return report.model_copy(update={"out": str(out), "seconds": round(time.perf_counter() - t0, 3)})


def _common(opts: BuildOptions, n_runs: int, n_warnings: int) -> dict[str, Any]:
    key_id = None
    if opts.public_pem:
        try:
            key_id = attest.key_id(attest.load_public_key(opts.public_pem))
        except ValueError:
            key_id = "unreadable key"
    return {
        "site_title": opts.site_title,
        "built_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "n_runs": n_runs,
        "n_warnings": n_warnings,
        "key_id": key_id,
        "repo_url": opts.repo_url,
    }


# Third-party files the pages load, shipped in the wheel under templates/site/ (no script from the network).
VENDORED = ("vendor/chart.umd.min.js", "vendor/chart.js-LICENSE.txt")
OVERLAY_POOL = 40  # best runs per track that logged curves: what run pages offer to overlay


def _overlay_pool(ranked: dict[str, list[Row]], with_metrics: set[int]) -> dict[str, list[dict[str, Any]]]:
    """Per track, its best runs that have curves (rank order): the runs a run page of that track offers to overlay."""
    return {tid: [{"run_id": r.run_id, "slug": r.slug, "name": r.name, "bpb": r.bpb}
                  for r in rows if r.index in with_metrics][:OVERLAY_POOL] for tid, rows in ranked.items()}


def _build_into(
    tmp: Path, found: list[tuple[str, str, bool]], warnings: list[str], opts: BuildOptions, t0: float
) -> BuildReport:
    pool = workers.Pool(
        found, opts.public_pem, opts.repo_url, _folder_in_repo(opts.sources), tmp, opts.workers
    )
    with pool:
        rows, notes = pool.parse()
        warnings.extend(notes)
        rows = _dedupe(rows, {i: f[0] for i, f in enumerate(found)}, warnings)
        tracks = opts.tracks
        ranked = _rank_tracks(rows, tracks)
        ranks: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for t in tracks:
            for i, r in enumerate(ranked[t.id], start=1):
                ranks[r.index].append({"name": t.name, "rank": i, "of": len(ranked[t.id]), "track": t.id})
        common = _common(opts, len(rows), len(warnings))
        common["overlay_pool"] = _overlay_pool(ranked, {i for i, f in enumerate(found) if f[2]})
        pool.start_render({r.index: ranks.get(r.index, []) for r in rows}, common)
        # Everything below needs only the rows: it runs while the workers write the run pages.
        frontiers = _frontiers(rows, ranked, {t.id: t.frontier_rule for t in tracks})
        table = index_table(rows, tracks, ranked, frontiers)
        table_text = script_json(table)
        table_bytes = _write(tmp / "data" / "table.json", table_text)
        embedded = table_text if table_bytes <= EMBED_MAX_BYTES else None
        index_bytes = _write(tmp / "index.html", _index_html(rows, tracks, ranked, opts, common, embedded))
        for t in tracks:
            _write(tmp / "tracks" / t.id / "frontier.json", _frontier_json(t, frontiers[t.id]))
        _write(tmp / "feed.xml", _feed(rows, frontiers, common))
        _records_and_suites(tmp, rows, opts, common, warnings)
        for name in ("style.css", "app.js", "run.js", *VENDORED):
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(templates_dir() / name, tmp / name)
        render_warnings, parts = pool.finish_render()
    warnings.extend(render_warnings)
    _write_runs_json(tmp / "runs.json", parts)
    return BuildReport(
        out=str(tmp),
        files=len(found),
        runs=len(rows),
        warnings=warnings,
        seconds=0.0,
        index_bytes=index_bytes,
        table_bytes=table_bytes,
    )


def _index_html(
    rows: list[Row],
    tracks: Tracks,
    ranked: dict[str, list[Row]],
    opts: BuildOptions,
    common: dict[str, Any],
    embedded: str | None = None,
) -> str:
    inf = float("inf")  # imported runs of Marin's first format have no model FLOPs
    best = min(rows, key=lambda r: (r.bpb, r.model_flops or inf), default=None)
    reach = []
    for t in tracks:
        if t.kind == "bpb_threshold" and t.target_bpb is not None:
            ok = [r for r in rows if r.bpb <= t.target_bpb and r.model_flops is not None]
            reach.append({"target": t.target_bpb, "row": min(ok, key=lambda r: r.model_flops, default=None)})
    view = []
    for t in tracks:
        view.append(
            {
                "id": t.id,
                "name": t.name,
                "kind": t.kind,
                "description": t.description,
                "count": len(ranked[t.id]),
                "band": tracks.bpb_band(t) if t.kind == "bpb_threshold" else None,
                "groups": _scaling_groups(t, ranked[t.id]) if t.kind == "scaling" else [],
                "projection": t.projection_flops,
                "min_r2": t.min_r2,
                "min_runs": t.min_runs,
                "group_root": t.group_root,
            }
        )
    boot = {
        "data": "data/table.json",
        "page_size": opts.page_size,
        "n_runs": len(rows),
        "tracks": [{"id": t.id, "kind": t.kind} for t in tracks],
    }
    return (
        environment()
        .get_template("index.html.j2")
        .render(
            **common,
            root="",
            tracks=view,
            best=best,
            reach=reach,
            n_verified=sum(r.verification == "verified" for r in rows),
            columns=[{"key": k, "label": label, "num": num} for k, label, num in COLUMNS],
            boot=script_json(boot),
            embedded=embedded,
        )
    )


def _feed(rows: list[Row], frontiers: dict[str, dict[str, list[Row]]], common: dict[str, Any]) -> str:
    on_front: dict[int, Row] = {}
    for fr in frontiers.values():
        for rs in fr.values():
            on_front.update((r.index, r) for r in rs)
    entries = sorted(on_front.values(), key=lambda r: r.finished_at, reverse=True)[:FEED_SIZE]
    updated = entries[0].finished_at if entries else datetime.now(UTC).isoformat()
    return environment().get_template("feed.xml.j2").render(**common, entries=entries, updated=updated)


def _records_and_suites(tmp: Path, rows: list[Row], opts: BuildOptions, common: dict[str, Any],
                        warnings: list[str]) -> None:
    """Record history per track and scaling suites (issue 14): ``records/``, ``suites.html``."""
    from leaderboard.records import discover_reproductions, write_records
    from leaderboard.suites import write_suites

    docs, notes = discover_reproductions(opts.reproductions)
    warnings.extend(notes)
    write_records(tmp, docs, common, opts.public_pem)
    write_suites(tmp, rows, common)
