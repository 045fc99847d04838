from __future__ import annotations

import random

from factory import make_results

from leaderboard.frontier import (
    assign_tracks,
    is_dominated,
    pareto_frontier,
    pareto_update,
    rank_in_track,
    rank_track,
    scaling_group,
)
from leaderboard.tracks import DEFAULT_TRACKS


def R(i: int, flops: float, bpb: float, hw: float | None = None):
    return make_results(i, model_flops=flops, bpb=bpb, hardware_flops=hw)


def ids(rs) -> list[str]:
    return [r.run_id for r in rs]


def test_frontier_rule_ties_and_order() -> None:
    a, b, c, d, e = R(1, 1e15, 3.0), R(2, 2e15, 3.0), R(3, 2e15, 2.5), R(4, 4e15, 2.6), R(5, 8e15, 2.0)
    front = pareto_frontier([e, d, c, b, a], rule="dominance")
    # b ties a on BPB at more FLOPs: not dominated (needs strictly lower BPB); but c has equal FLOPs and lower BPB.
    assert ids(front) == ids([a, c, e])
    same = R(6, 1e15, 3.0)
    assert set(ids(pareto_frontier([a, same], rule="dominance"))) == {a.run_id, same.run_id}
    assert ids(pareto_frontier([a, R(7, 2e15, 3.0)], rule="dominance")) == [a.run_id, "run-0-00007"]
    # Marin's rule (the default): a strictly better BPB than every cheaper-or-earlier run, in stable order.
    assert ids(pareto_frontier([e, d, c, b, a])) == ids([a, c, e])
    assert ids(pareto_frontier([a, same])) == [a.run_id]
    assert ids(pareto_frontier([b, c])) == ids([b, c])  # equal FLOPs: the later, better one is kept too


def test_frontier_matches_brute_force() -> None:
    rng = random.Random(3)
    runs = [R(i, rng.choice([1e14, 2e14, 5e14, 1e15, 3e15]), rng.choice([2.0, 2.1, 2.2, 2.5, 3.0])) for i in range(200)]
    brute = {r.run_id for r in runs if not is_dominated(r, runs)}
    assert set(ids(pareto_frontier(runs, rule="dominance"))) == brute
    flops = [r.model_flops for r in pareto_frontier(runs)]
    assert flops == sorted(flops)


def test_hardware_axis_skips_runs_without_hardware_flops() -> None:
    a, b = R(1, 1e15, 3.0, hw=None), R(2, 2e15, 2.9, hw=4e15)
    assert ids(pareto_frontier([a, b], x="hardware_flops")) == [b.run_id]
    assert ids(pareto_frontier([a, b], x="model_flops")) == [a.run_id, b.run_id]


def test_bpb_bands_are_disjoint_and_budgets_cumulative() -> None:
    t = DEFAULT_TRACKS
    assert "sub_2_5" in assign_tracks(R(1, 1e14, 2.5), t)
    assert "sub_3" not in assign_tracks(R(1, 1e14, 2.5), t)
    assert "sub_3" in assign_tracks(R(1, 1e14, 2.5001), t)
    assert assign_tracks(R(1, 1e20, 3.5), t) == ["all"]
    assert {"budget_1e15", "budget_1e17", "budget_1e19"} <= set(assign_tracks(R(1, 1e15, 3.5), t))
    assert "budget_1e15" not in assign_tracks(R(1, 1.0001e15, 3.5), t)


def test_scaling_membership_by_folder() -> None:
    tr = DEFAULT_TRACKS.get("scaling")
    assert tr is not None
    assert scaling_group("experiments/speedrun/adamw/130m", tr) == "adamw"
    assert scaling_group("experiments/speedrun/a/b/130m", tr) == "a/b"
    assert scaling_group("experiments/speedrun/tiny", tr) is None
    assert scaling_group("elsewhere/x/y", tr) is None
    r = R(1, 1e14, 3.5)
    assert "scaling" in assign_tracks(r, DEFAULT_TRACKS, path="experiments/speedrun/adamw/130m")
    assert "scaling" not in assign_tracks(r, DEFAULT_TRACKS)


def test_ranking_bpb_tracks_by_flops_others_by_bpb() -> None:
    runs = [R(1, 3e14, 2.2), R(2, 1e14, 2.4), R(3, 2e14, 2.1)]
    marin_band = DEFAULT_TRACKS.get("sub_2_5")
    assert marin_band is not None
    assert ids(rank_track(runs, marin_band, DEFAULT_TRACKS)) == ids([runs[2], runs[0], runs[1]])  # Marin: by BPB
    band = marin_band.model_copy(update={"rank_by": "flops"})
    assert ids(rank_track(runs, band, DEFAULT_TRACKS)) == ids([runs[1], runs[2], runs[0]])
    all_ = DEFAULT_TRACKS.get("all")
    assert all_ is not None
    assert ids(rank_track(runs, all_, DEFAULT_TRACKS)) == ids([runs[2], runs[0], runs[1]])
    assert rank_in_track(runs[0], runs, band, DEFAULT_TRACKS) == 3
    assert rank_in_track(R(9, 1e13, 2.3), runs, band, DEFAULT_TRACKS) == 1
    assert rank_in_track(R(9, 1e13, 3.3), runs, band, DEFAULT_TRACKS) is None


def test_pareto_update_summary() -> None:
    old = [R(1, 1e14, 2.6), R(2, 4e14, 2.3), R(3, 8e14, 2.4), R(4, 5e13, 2.9)]
    new = R(5, 2e14, 2.2)
    u = pareto_update(new, old, DEFAULT_TRACKS)
    assert u.on_frontier
    assert {b.run_id for b in u.beats} == {old[1].run_id, old[2].run_id}
    assert u.beats_count == 2
    assert [d.run_id for d in u.displaced] == [old[1].run_id]
    assert u.dominated_by == []
    assert u.bpb_track is not None and u.bpb_track.track_id == "sub_2_5"
    assert (u.bpb_track.rank, u.bpb_track.of) == (1, 3)  # 2.0 < bpb <= 2.5, best BPB first
    assert any(t.track_id == "all" and t.rank == 1 for t in u.tracks)
    worse = pareto_update(R(6, 9e14, 2.5), old, DEFAULT_TRACKS)
    assert not worse.on_frontier
    assert {d.run_id for d in worse.dominated_by} == {old[1].run_id, old[2].run_id}
    # A run already in the list is replaced, not compared with itself: "before" is the board without it.
    again = pareto_update(old[1], old, DEFAULT_TRACKS)
    assert again.on_frontier and [d.run_id for d in again.displaced] == [old[2].run_id]
    assert u.model_dump(mode="json")["kind"] == "pareto_update"
