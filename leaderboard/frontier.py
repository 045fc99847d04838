"""Pareto frontier, track assignment and ranking: plain functions over :class:`runner.schema.Results`
(or anything with ``run_id, name, bpb, model_flops, hardware_flops``, see :class:`Scored`).

The bot calls these for its Pareto comments and the site for its chart and tables, so both agree.

Two frontier rules, named by a track's ``frontier_rule`` (a run with no value on the chosen axis, e.g. an
imported run without model FLOPs, is left out of that axis' frontier under both):

- ``marin`` (the default): the rule of Marin's site, ``computeParetoFront`` in marin-community/speedrun
  ``website/src/hooks/useSpeedrunData.ts``, point for point: sort the runs by FLOPs with a *stable* sort
  (runs with equal FLOPs keep their input order, which is file order, as Marin's ``runs.json`` is) and
  keep each run whose BPB is strictly below every BPB kept before it. So of two runs with equal FLOPs
  the later one is kept too when it is better (whole scaling suites share one FLOPs value), and of two
  runs with equal BPB only the cheaper one is kept.
- ``dominance``: a run is dropped when another run has FLOPs ``<=`` and BPB strictly ``<``. Of runs with
  equal FLOPs only the best stays; runs with equal BPB all stay. The result does not depend on order.

On Marin's 96 runs (``data/runs.json``) the Marin rule keeps 39 on model FLOPs and 27 on hardware FLOPs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, Protocol, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from leaderboard.tracks import FlopsAxis, FrontierRule, Track, Tracks, as_tracks


class Scored(Protocol):
    """What ranking needs of a run: :class:`runner.schema.Results` has it, so does the site's compact row."""

    @property
    def run_id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def bpb(self) -> float: ...
    @property
    def model_flops(self) -> float: ...
    @property
    def hardware_flops(self) -> float | None: ...


R = TypeVar("R", bound=Scored)


def flops_of(run: Scored, x: FlopsAxis = "model_flops") -> float | None:
    return run.model_flops if x == "model_flops" else run.hardware_flops


def pareto_frontier(runs: Iterable[R], x: FlopsAxis = "model_flops", rule: FrontierRule = "marin") -> list[R]:
    """The frontier under ``rule``, sorted by FLOPs ascending. O(n log n)."""
    if rule == "marin":
        return marin_frontier_of_ordered(flops_order(runs, x))
    return frontier_of_ordered(pareto_order(runs, x), x)


def flops_order(runs: Iterable[R], x: FlopsAxis = "model_flops") -> list[R]:
    """The runs with a value on axis ``x``, stably sorted by FLOPs alone (ties keep their input order)."""
    pts = [(f, i, r) for i, r in enumerate(runs) if (f := flops_of(r, x)) is not None]
    pts.sort(key=lambda p: (p[0], p[1]))
    return [p[2] for p in pts]


def marin_frontier_of_ordered(ordered: Sequence[R]) -> list[R]:
    """Marin's ``computeParetoFront`` over runs already in :func:`flops_order`: keep a run whose BPB is
    strictly below the best kept so far."""
    best = float("inf")
    out = []
    for r in ordered:
        if r.bpb < best:
            best = r.bpb
            out.append(r)
    return out


def frontier_for(ordered_by_rule: Sequence[R], x: FlopsAxis, rule: FrontierRule) -> list[R]:
    """The frontier of runs already in the order ``rule`` scans (:func:`flops_order` or :func:`pareto_order`)."""
    return marin_frontier_of_ordered(ordered_by_rule) if rule == "marin" else frontier_of_ordered(ordered_by_rule, x)


def pareto_order(runs: Iterable[R], x: FlopsAxis = "model_flops") -> list[R]:
    """The runs with a value on axis ``x``, sorted by (FLOPs, BPB, run id), ties in input order.

    Any subsequence of this list is itself in this order, so the site sorts all runs once per axis and
    takes each track's frontier from its members' subsequence (:func:`frontier_of_ordered`).
    """
    # The input position breaks exact ties, so tuples sort natively and runs themselves are never compared.
    pts = [(f, r.bpb, r.run_id, i, r) for i, r in enumerate(runs) if (f := flops_of(r, x)) is not None]
    pts.sort()
    return [p[4] for p in pts]


def frontier_of_ordered(ordered: Sequence[R], x: FlopsAxis = "model_flops") -> list[R]:
    """:func:`pareto_frontier` of runs already in :func:`pareto_order`. O(n).

    A run is dominated exactly when the best BPB seen at FLOPs <= its own (runs before it plus the first
    run of its equal-FLOPs group) is strictly lower than its BPB.
    """
    if not ordered:
        return []
    f = np.array([flops_of(r, x) for r in ordered], dtype=float)
    bpb = np.array([r.bpb for r in ordered], dtype=float)
    starts = np.concatenate(([True], f[1:] != f[:-1]))  # first run of each equal-FLOPs group
    group = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    best_before = np.concatenate(([np.inf], np.minimum.accumulate(bpb)))[first]
    floor = np.minimum(best_before, bpb[first])[group]
    return [ordered[i] for i in np.flatnonzero(~(floor < bpb))]


def is_dominated(run: Scored, others: Iterable[Scored], x: FlopsAxis = "model_flops") -> bool:
    f = flops_of(run, x)
    if f is None:
        return True
    return any(
        o.run_id != run.run_id and (g := flops_of(o, x)) is not None and g <= f and o.bpb < run.bpb
        for o in others
    )


def scaling_group(path: str | None, track: Track) -> str | None:
    """The scaling group of a run folder (every segment but the leaf, below ``track.group_root``)."""
    if not path:
        return None
    rel = path.strip("/")
    root = track.group_root.strip("/")
    if root:
        if not rel.startswith(root + "/"):
            return None
        rel = rel[len(root) + 1 :]
    head, sep, _leaf = rel.rpartition("/")
    return head if sep and head else None


def in_track(
    run: Scored,
    track: Track,
    tracks: Tracks,
    path: str | None = None,
    band: tuple[float, float] | None = None,
) -> bool:
    """Whether ``run`` belongs to ``track``. ``path`` is the run's folder, used only by scaling tracks.

    ``band`` is ``tracks.bpb_band(track)`` when the caller has it already (the site tests 10,000 runs).
    """
    if track.kind == "all":
        return True
    if track.kind == "flops_budget":
        f = flops_of(run, track.flops_axis)
        return f is not None and track.max_flops is not None and f <= track.max_flops
    if track.kind == "bpb_threshold":
        lower, upper = band or tracks.bpb_band(track)
        return lower < run.bpb <= upper and flops_of(run, track.flops_axis) is not None
    return scaling_group(path, track) is not None


def assign_tracks(
    run: Scored, tracks: Tracks | Sequence[Track] | None = None, path: str | None = None
) -> list[str]:
    """Ids of every track ``run`` belongs to, in the configured order (scaling only when ``path`` groups it)."""
    ts = as_tracks(tracks)
    return [t.id for t in ts if in_track(run, t, ts, path)]


def rank_key(run: Scored, track: Track) -> tuple[float, float, str]:
    """Sort key within a track: by BPB (as Marin's table), except a BPB band with ``rank_by: flops``."""
    f = flops_of(run, track.flops_axis)
    f = float("inf") if f is None else f
    if track.kind == "bpb_threshold" and track.rank_by == "flops":
        return (f, run.bpb, run.run_id)
    return (run.bpb, f, run.run_id)


def rank_track(
    runs: Iterable[R],
    track: Track,
    tracks: Tracks | Sequence[Track] | None = None,
    paths: Mapping[str, str] | None = None,
) -> list[R]:
    """The members of ``track`` in rank order (rank 1 first). ``paths`` maps run id to folder (scaling)."""
    ts = as_tracks(tracks)
    paths = paths or {}
    members = [r for r in runs if in_track(r, track, ts, paths.get(r.run_id))]
    members.sort(key=lambda r: rank_key(r, track))
    return members


def rank_in_track(
    run: R,
    runs: Iterable[R],
    track: Track,
    tracks: Tracks | Sequence[Track] | None = None,
    paths: Mapping[str, str] | None = None,
) -> int | None:
    """1-based rank of ``run`` in ``track`` among ``runs`` (``run`` is added if absent); None if not a member."""
    pool = {r.run_id: r for r in runs}
    pool[run.run_id] = run
    for i, r in enumerate(rank_track(pool.values(), track, tracks, paths), start=1):
        if r.run_id == run.run_id:
            return i
    return None


class RunRef(BaseModel):
    """A run as a Pareto summary names it."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    name: str
    bpb: float
    flops: float | None


class TrackRank(BaseModel):
    model_config = ConfigDict(extra="forbid")

    track_id: str
    track_name: str
    kind: str
    rank: int
    of: int


class ParetoUpdate(BaseModel):
    """Where one run lands against the leaderboard: what the bot's Pareto comment reports."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    x: FlopsAxis
    flops: float | None
    bpb: float
    on_frontier: bool
    beats: list[RunRef] = Field(
        description="Runs it dominates: FLOPs >= its own and BPB strictly higher (best first, at most 20)."
    )
    beats_count: int
    dominated_by: list[RunRef] = Field(description="Runs that dominate it (at most 20).")
    displaced: list[RunRef] = Field(description="Runs that were on the frontier before and no longer are.")
    bpb_track: TrackRank | None = Field(description="Its rank in the BPB-threshold band it falls in, if any.")
    tracks: list[TrackRank] = Field(description="Its rank in every track it belongs to.")
    frontier_size: int
    kind: Literal["pareto_update"] = "pareto_update"


def _ref(r: Scored, x: FlopsAxis) -> RunRef:
    return RunRef(run_id=r.run_id, name=r.name, bpb=r.bpb, flops=flops_of(r, x))


def pareto_update(
    run: R,
    all_runs: Iterable[R],
    tracks: Tracks | Sequence[Track] | None = None,
    x: FlopsAxis = "model_flops",
    path: str | None = None,
    paths: Mapping[str, str] | None = None,
    limit: int = 20,
    rule: FrontierRule | None = None,
) -> ParetoUpdate:
    """Summarise ``run`` against ``all_runs`` (a run with the same id in ``all_runs`` is replaced by ``run``).

    ``rule`` defaults to the frontier rule of the ``all`` track (Marin's when there is none).
    """
    ts = as_tracks(tracks)
    if rule is None:
        rule = next((t.frontier_rule for t in ts if t.kind == "all"), "marin")
    others = [r for r in all_runs if r.run_id != run.run_id]
    pool = [*others, run]
    before = {r.run_id for r in pareto_frontier(others, x, rule)}
    after = pareto_frontier(pool, x, rule)
    after_ids = {r.run_id for r in after}
    f = flops_of(run, x)
    beats: list[R] = []
    dominated_by: list[R] = []
    if f is not None:
        for o in others:
            g = flops_of(o, x)
            if g is None:
                continue
            if g >= f and o.bpb > run.bpb:
                beats.append(o)
            elif g <= f and o.bpb < run.bpb:
                dominated_by.append(o)
    beats.sort(key=lambda r: (r.bpb, r.run_id))
    dominated_by.sort(key=lambda r: (r.bpb, r.run_id))
    all_paths = dict(paths or {})
    if path is not None:
        all_paths[run.run_id] = path
    ranks: list[TrackRank] = []
    for t in ts:
        ranked = rank_track(pool, t, ts, all_paths)
        pos = next((i for i, r in enumerate(ranked, start=1) if r.run_id == run.run_id), None)
        if pos is not None:
            ranks.append(TrackRank(track_id=t.id, track_name=t.name, kind=t.kind, rank=pos, of=len(ranked)))
    displaced = [r for r in others if r.run_id in before and r.run_id not in after_ids]
    return ParetoUpdate(
        run_id=run.run_id,
        x=x,
        flops=f,
        bpb=run.bpb,
        on_frontier=run.run_id in after_ids,
        beats=[_ref(r, x) for r in beats[:limit]],
        beats_count=len(beats),
        dominated_by=[_ref(r, x) for r in dominated_by[:limit]],
        displaced=[_ref(r, x) for r in displaced],
        bpb_track=next((tr for tr in ranks if tr.kind == "bpb_threshold"), None),
        tracks=ranks,
        frontier_size=len(after),
    )
