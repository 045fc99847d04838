"""Leaderboard tracks: which runs compete with which, and how they are ranked.

A track is one of four kinds (Marin's speedrun site, ../shared/reference/marin.md §2.8):

- ``all``: every run, ranked by BPB (then FLOPs).
- ``flops_budget``: runs whose FLOPs on ``flops_axis`` are ``<= max_flops``, ranked by BPB. Budgets are
  cumulative ("best BPB for at most this much compute"), so a small run also competes in larger budgets.
- ``bpb_threshold``: runs in the band ``next_lower < bpb <= target_bpb``, where ``next_lower`` is the next
  lower target among the threshold tracks (0 for the lowest). Bands are disjoint, as on Marin's site, and
  ranked as Marin's table ranks them, by BPB (``rank_by: bpb``, the default); ``rank_by: flops`` ranks by
  FLOPs instead ("least compute to reach the target").
- ``scaling``: runs grouped by folder: a run whose folder, relative to ``group_root``, is ``GROUP/LEAF``
  belongs to group ``GROUP`` (every path segment but the leaf), so ``experiments/speedrun/adamw/130m`` is in
  group ``adamw`` while a single speedrun ``experiments/speedrun/tiny`` is in none. Run folders are
  repo-relative for a glob source and relative to the store URL for a store source. A group needs
  ``min_runs`` runs; each gets a power-law fit (:mod:`leaderboard.scaling`). With ``min_hardware_flops``
  set, a group is listed only when one of its runs used more hardware FLOPs than that (Marin's site: 3e20).

Every track also names its ``frontier_rule`` (:mod:`leaderboard.frontier`): ``marin`` (the default, the
rule of Marin's site) or ``dominance``.

:data:`MARIN_TRACKS` is Marin's own track list (its ``data/tracks.json`` and the site's constants);
``--tracks marin`` picks it.

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
FrontierRule = Literal["marin", "dominance"]
RankBy = Literal["bpb", "flops"]
MARIN_SCALING_MIN_HARDWARE_FLOPS = 3e20


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
    min_runs: int = Field(default=3, ge=1, description="scaling: runs a group needs to be listed (a fit needs 3).")
    projection_flops: float = Field(default=1e22, gt=0, description="scaling: budget for projected BPB.")
    min_r2: float = Field(default=0.9, le=1, description="scaling: rows with a poorer fit are greyed.")
    color: str | None = Field(default=None, pattern=r"^#[0-9a-fA-F]{6}$")
    frontier_rule: FrontierRule = Field(
        default="marin", description="marin: Marin's site rule; dominance: drop runs another run dominates."
    )
    rank_by: RankBy = Field(
        default="bpb", description="bpb_threshold: rank by BPB (Marin's table) or by FLOPs (least compute)."
    )
    min_hardware_flops: float | None = Field(
        default=None,
        gt=0,
        description="scaling: list a group only when one of its runs used more hardware FLOPs (Marin: 3e20).",
    )

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
        description=f"Runs that reach ≤ {target:g} BPB on the primary eval set (and not the next band), best first.",
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


def _marin_band(track_id: str, name: str, target: float, color: str) -> Track:
    return Track(id=track_id, name=name, kind="bpb_threshold", target_bpb=target, color=color,
                 description=f"Runs between the next lower target and {target:.4g} BPB, best BPB first.")


# Marin's tracks (marin-community/speedrun data/tracks.json; the scaling cut-off is the site's
# MIN_SCALING_LEADERBOARD_FLOPS). Its targets are its reference runs' BPBs on Paloma c4_en.
MARIN_TRACKS = Tracks(
    tracks=[
        Track(id="all", name="All Runs", kind="all", color="#1a73e8",
              description="All submitted runs regardless of target loss"),
        _marin_band("llama_30m", "llama 30m (1.53 BPB)", 1.5263875722885132, "#eab308"),
        _marin_band("llama_75m", "llama 75m (1.28 BPB)", 1.2788727283477783, "#6366f1"),
        _marin_band("llama_300m", "llama 300m (1.10 BPB)", 1.103714942932129, "#14b8a6"),
        _marin_band("llama_1_4b", "llama 1.4B (~0.9 BPB)", 0.9557313919067384, "#f472b6"),
        Track(id="scaling", name="Scaling", kind="scaling", color="#4f46e5",
              description="Group runs by leading folder to view scaling trends",
              min_runs=1, min_hardware_flops=MARIN_SCALING_MIN_HARDWARE_FLOPS),
    ]
)
PRESETS = {"marin": MARIN_TRACKS}


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

    ``None`` or a missing file means the defaults; a preset's name (``marin``) means that preset.
    """
    if path is None:
        return DEFAULT_TRACKS
    if str(path) in PRESETS:
        return PRESETS[str(path)]
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
