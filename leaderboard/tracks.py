"""Leaderboard tracks: which runs compete with which, and how they are ranked.

A track is one of four kinds (Marin's speedrun site, ../shared/reference/marin.md §2.8):

- ``all``: every run, ranked by BPB (then FLOPs).
- ``flops_budget``: runs whose FLOPs on ``flops_axis`` are ``<= max_flops``, ranked by BPB. Budgets are
  cumulative ("best BPB for at most this much compute"), so a small run also competes in larger budgets.
- ``bpb_threshold``: runs in the band ``next_lower < bpb <= target_bpb``, where ``next_lower`` is the next
  lower target among the threshold tracks (0 for the lowest), ranked by FLOPs ("least compute to reach
  the target"). Bands are disjoint, as on Marin's site.
- ``scaling``: runs grouped by folder: a run whose folder, relative to ``group_root``, is ``GROUP/LEAF``
  belongs to group ``GROUP`` (every path segment but the leaf), so ``experiments/speedrun/adamw/130m`` is in
  group ``adamw`` while a single speedrun ``experiments/speedrun/tiny`` is in none. Run folders are
  repo-relative for a glob source and relative to the store URL for a store source. A group needs
  ``min_runs`` runs; each gets a power-law fit (:mod:`leaderboard.scaling`).

Tracks are configured in ``.github/openlab.yml`` under ``tracks:`` (a list of :class:`Track` objects);
missing means :data:`DEFAULT_TRACKS`. The bot and the site both read them through :func:`parse_tracks`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from runner.config import format_validation_error
from runner.errors import ConfigError

TrackKind = Literal["all", "flops_budget", "bpb_threshold", "scaling"]
FlopsAxis = Literal["model_flops", "hardware_flops"]


class Track(BaseModel):
    """One leaderboard tab. Kind-specific fields are required for their kind and rejected for others."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,47}$", description="Stable slug used in URLs and files.")
    name: str = Field(min_length=1, max_length=80)
    description: str = ""
    kind: TrackKind
    flops_axis: FlopsAxis = Field(
        default="model_flops", description="Which FLOPs count for budgets, ranking and the fit."
    )
    max_flops: float | None = Field(default=None, gt=0, description="flops_budget: the budget (inclusive).")
    target_bpb: float | None = Field(default=None, gt=0, description="bpb_threshold: the band's upper edge.")
    group_root: str = Field(
        default="experiments/speedrun",
        description="scaling: folder whose nested run folders form groups (paths as the build sees them).",
    )
    min_runs: int = Field(default=3, ge=3, description="scaling: runs a group needs to be fitted.")
    projection_flops: float = Field(default=1e22, gt=0, description="scaling: budget for projected BPB.")
    min_r2: float = Field(default=0.9, le=1, description="scaling: rows with a poorer fit are greyed.")
    color: str | None = Field(default=None, pattern=r"^#[0-9a-fA-F]{6}$")

    @model_validator(mode="after")
    def _kind_fields(self) -> Track:
        need = {"flops_budget": "max_flops", "bpb_threshold": "target_bpb"}
        for kind, field in need.items():
            given = getattr(self, field) is not None
            if kind == self.kind and not given:
                raise ValueError(f"{field}: required for a {kind} track")
            if kind != self.kind and given:
                raise ValueError(f"{field}: only allowed on a {kind} track, not {self.kind}")
        return self


class Tracks(BaseModel):
    """The configured track list, validated as a whole (unique ids, distinct thresholds)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tracks: list[Track] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> Tracks:
        ids = [t.id for t in self.tracks]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"tracks: duplicate ids {dup}")
        targets = [t.target_bpb for t in self.tracks if t.kind == "bpb_threshold"]
        if len(set(targets)) != len(targets):
            raise ValueError("tracks: two bpb_threshold tracks share a target_bpb")
        return self

    def __iter__(self):  # type: ignore[override]
        return iter(self.tracks)

    def __len__(self) -> int:
        return len(self.tracks)

    def get(self, track_id: str) -> Track | None:
        return next((t for t in self.tracks if t.id == track_id), None)

    def bpb_band(self, track: Track) -> tuple[float, float]:
        """(lower exclusive, upper inclusive) BPB edges of a threshold track's band."""
        if track.target_bpb is None:
            raise ValueError(f"track {track.id} is not a bpb_threshold track")
        lower = max(
            (
                t.target_bpb
                for t in self.tracks
                if t.target_bpb is not None and t.target_bpb < track.target_bpb
            ),
            default=0.0,
        )
        return lower, track.target_bpb


def _threshold(target: float) -> Track:
    label = f"{target:g}".replace(".", "_")
    return Track(
        id=f"sub_{label}",
        name=f"BPB ≤ {target:g}",
        description=f"Least model FLOPs to reach ≤ {target:g} BPB on the primary eval set.",
        kind="bpb_threshold",
        target_bpb=target,
    )


def _budget(flops: float, name: str) -> Track:
    return Track(
        id=f"budget_{flops:.0e}".replace("+", ""),
        name=name,
        description=f"Best BPB for at most {flops:.0e} model FLOPs.",
        kind="flops_budget",
        max_flops=flops,
    )


DEFAULT_TRACKS = Tracks(
    tracks=[
        Track(id="all", name="All runs", description="Every run, ranked by BPB.", kind="all"),
        _budget(1e15, "≤ 1e15 FLOPs"),
        _budget(1e17, "≤ 1e17 FLOPs"),
        _budget(1e19, "≤ 1e19 FLOPs"),
        *(_threshold(t) for t in (3.0, 2.5, 2.0, 1.5)),
        Track(
            id="scaling",
            name="Scaling",
            description="Runs grouped by folder; a power-law fit bpb = a·FLOPs^(−b) + c per group.",
            kind="scaling",
        ),
    ]
)


def default_tracks() -> list[Track]:
    """A fresh copy of the default track list (for pydantic ``default_factory``)."""
    return list(DEFAULT_TRACKS.tracks)


def parse_tracks(data: Any, source: str = "tracks") -> Tracks:
    """Validate a track list: a list of track mappings, or a mapping with a ``tracks`` key (openlab.yml).

    ``None``, or a mapping without ``tracks``, means the defaults. Errors name the source and the field.
    """
    if data is None:
        return DEFAULT_TRACKS
    if isinstance(data, Mapping):
        if "tracks" not in data or data["tracks"] is None:
            return DEFAULT_TRACKS
        data = data["tracks"]
    if isinstance(data, Tracks):
        return data
    if not isinstance(data, Sequence) or isinstance(data, str | bytes):
        raise ConfigError(f"{source}: tracks must be a list of track objects")
    try:
        return Tracks.model_validate({"tracks": list(data)})
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, source)) from None


def load_tracks(path: str | Path | None) -> Tracks:
    """Read tracks from a YAML file (a bare list, or a file with a ``tracks:`` key such as openlab.yml).

    ``None`` or a missing file means the defaults.
    """
    if path is None:
        return DEFAULT_TRACKS
    p = Path(path)
    if not p.exists():
        return DEFAULT_TRACKS
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{p}: cannot read tracks: {err}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{p}{where}: not valid YAML") from None
    return parse_tracks(data, str(p))


def as_tracks(tracks: Tracks | Iterable[Track] | None) -> Tracks:
    """Accept a Tracks object, a plain list of Track, or None (defaults)."""
    if tracks is None:
        return DEFAULT_TRACKS
    if isinstance(tracks, Tracks):
        return tracks
    return Tracks(tracks=list(tracks))
