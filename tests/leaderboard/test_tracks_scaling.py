from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from leaderboard.scaling import fit_power_law
from leaderboard.tracks import DEFAULT_TRACKS, Track, load_tracks, parse_tracks
from runner.errors import ConfigError


def test_defaults_and_bands() -> None:
    kinds = {t.kind for t in DEFAULT_TRACKS}
    assert kinds == {"all", "flops_budget", "bpb_threshold", "scaling"}
    t = DEFAULT_TRACKS.get("sub_2")
    assert t is not None and DEFAULT_TRACKS.bpb_band(t) == (1.5, 2.0)
    lowest = DEFAULT_TRACKS.get("sub_1_5")
    assert lowest is not None and DEFAULT_TRACKS.bpb_band(lowest) == (0.0, 1.5)


def test_parse_from_openlab_yml(tmp_path: Path) -> None:
    p = tmp_path / "openlab.yml"
    p.write_text(
        "approval_label: ok\ntracks:\n  - {id: all, name: All, kind: all}\n"
        "  - {id: sub_2, name: '<= 2', kind: bpb_threshold, target_bpb: 2.0}\n"
    )
    tracks = load_tracks(p)
    assert [t.id for t in tracks] == ["all", "sub_2"]
    assert load_tracks(tmp_path / "missing.yml") is DEFAULT_TRACKS
    assert parse_tracks({"approval_label": "x"}) is DEFAULT_TRACKS


@pytest.mark.parametrize(
    "bad, needle",
    [
        ([{"id": "x", "name": "x", "kind": "bpb_threshold"}], "target_bpb: required"),
        ([{"id": "x", "name": "x", "kind": "all", "max_flops": 1e15}], "max_flops: only allowed"),
        ([{"id": "x", "name": "x", "kind": "all"}, {"id": "x", "name": "y", "kind": "all"}], "duplicate ids"),
        ([{"id": "Bad Id", "name": "x", "kind": "all"}], "tracks.0.id"),
        ("nope", "must be a list"),
    ],
)
def test_bad_tracks_name_the_field(bad: object, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        parse_tracks(bad, "openlab.yml")


def test_track_model_is_frozen_and_strict() -> None:
    with pytest.raises(ValueError):
        Track(id="a", name="a", kind="all", colour="#fff")  # type: ignore[call-arg]


def test_power_law_fit_recovers_parameters() -> None:
    x = np.array([1e17, 3e17, 1e18, 3e18, 1e19, 3e19])
    y = 40 * x ** -0.06 + 0.7
    fit = fit_power_law(x, y)
    assert fit is not None
    assert fit.r2 > 0.9999
    assert fit.b == pytest.approx(0.06, rel=1e-3) and fit.c == pytest.approx(0.7, rel=1e-3)
    assert fit.predict(1e22) == pytest.approx(40 * 1e22 ** -0.06 + 0.7, rel=1e-4)


def test_power_law_fit_poor_and_degenerate() -> None:
    assert fit_power_law([1e15, 1e15, 2e15], [2.0, 2.1, 2.2]) is None
    noisy = fit_power_law([1e15, 2e15, 4e15, 8e15], [2.0, 2.6, 1.9, 2.7])
    assert noisy is not None and noisy.r2 < 0.9
