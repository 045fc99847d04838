"""`.github/openlab.yml`: the per-repository settings maintainers control.

A missing file means the defaults below (documented in README "Bot"). A malformed file is reported on the
thread and the defaults are used, so one typo never silences the bot.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bot.config.quotas import Quotas
from leaderboard.tracks import Track, default_tracks, parse_tracks
from runner.config import format_validation_error
from runner.errors import ConfigError
from runner.safeparse import loads_yaml

CONFIG_PATH = ".github/openlab.yml"


class Budgets(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_flops_per_run: float = Field(1e21, gt=0, description="Upper bound on an experiment's planned model FLOPs.")
    max_flops_per_speedrun: float = Field(1e20, gt=0, description="Upper bound on a speedrun's planned model FLOPs.")
    max_queued_runs_per_pr: int = Field(3, ge=1, description="`/run` refuses past this many queued runs on one PR.")


class SpeedrunRules(BaseModel):
    """Reproduction and record rules of speedruns (`/verify`, records per track; README "Speedrun rules")."""

    model_config = ConfigDict(extra="forbid")

    verify_seeds: int = Field(3, ge=2, le=16, description="Seeds a `/verify` reproduction runs (seeds 0..N-1).")
    tolerance_bpb: float = Field(0.01, ge=0, description="A claim reproduces when the seeds' mean BPB is within "
                                 "this (or the 95% interval's half-width, if wider) of the submission's BPB.")
    record_p_value: float = Field(0.01, gt=0, lt=1, description="A record needs a one-sided Welch p-value below this "
                                  "against the current record's seeds.")
    track_tolerance_bpb: dict[str, float] = Field(default_factory=dict, description="Per speedrun track overrides "
                                                  "of tolerance_bpb.")
    track_record_p_value: dict[str, float] = Field(default_factory=dict, description="Per speedrun track overrides "
                                                   "of record_p_value.")

    def tolerance(self, track: str) -> float:
        return self.track_tolerance_bpb.get(track, self.tolerance_bpb)

    def p_threshold(self, track: str) -> float:
        return self.track_record_p_value.get(track, self.record_p_value)


class RepoConfig(BaseModel):
    """What `.github/openlab.yml` may say; every field has a default."""

    model_config = ConfigDict(extra="forbid")

    approval_label: str = Field("approved-to-run", description="Label that approves the PR's head SHA when a trusted user adds it.")
    preregistered_label: str = Field("preregistered", description="Set on a valid preregistration issue.")
    needs_info_label: str = Field("needs-info", description="Set on a preregistration with fields to fix.")
    experiment_label: str = Field("experiment", description="Label of the Experiment issue form.")
    speedrun_label: str = Field("speedrun", description="Label of the Speedrun issue form.")
    approvers: list[str] = Field(default_factory=list, description="Logins trusted in addition to write+ users.")
    approver_teams: list[str] = Field(default_factory=list, max_length=10, description="Teams (`org/slug`, or `slug` in the repository owner's organization) whose active members are trusted like approvers; needs the App's organization members (read) permission.")
    min_permission: str = Field("write", pattern="^(triage|write|maintain|admin)$", description="Lowest repository role whose /run and approval label count.")
    # The leaderboard owns the Track model; a preregistration names one of these tracks by id.
    tracks: list[Track] = Field(default_factory=default_tracks, description="Leaderboard tracks; a preregistration names one by id.")
    budgets: Budgets = Field(default_factory=Budgets, description="FLOPs caps checked on preregistrations and plans.")
    quotas: Quotas = Field(default_factory=Quotas, description="Active runs per PR/user/repo, FLOPs per month.")
    storage_prefix: str = Field("file://./artifacts", description="Where runs write outputs and records (path or gs://); OPENLAB_STORAGE_PREFIX overrides it.")
    wandb_project: str = Field("openlab", description="W&B project of the lab's runs.")
    site_url: str | None = Field(
        None, pattern=r"^https?://", description="Public URL of the lab's site (leaderboard, reports, execution "
        "pages); run comments link each run's execution page there.",
    )
    ray_address_env: str = Field("RAY_ADDRESS", description="Name of the variable holding the Ray address on the bot host.")
    experiments_dir: str = Field("experiments", description="Folder of experiment files (expNNN_slug.py, speedrun/<name>/<name>.py).")
    speedrun: SpeedrunRules = Field(default_factory=SpeedrunRules, description="Reproduction (`/verify`) and record "
                                    "rules of speedruns.")

    @field_validator("tracks", mode="before")
    @classmethod
    def _tracks(cls, v: object) -> object:
        return list(parse_tracks(v, "tracks").tracks)

    def track(self, name: str) -> Track | None:
        """The configured track whose id or display name is `name` (case-insensitive)."""
        low = name.strip().lower()
        return next((t for t in self.tracks if low in (t.id.lower(), t.name.lower())), None)


def parse_repo_config(text: str | None) -> RepoConfig:
    """Parse the YAML text of openlab.yml (None = file missing = defaults)."""
    if text is None or not text.strip():
        return RepoConfig()
    data = loads_yaml(text, CONFIG_PATH)  # ConfigError naming the file and line, also for a too-deep file
    if data is None:
        return RepoConfig()
    if not isinstance(data, dict):
        raise ConfigError(f"{CONFIG_PATH}: expected a mapping at the top level")
    try:
        return RepoConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, CONFIG_PATH)) from None
