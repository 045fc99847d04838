"""The results schema: one pydantic model per concept, read by the trainer, the bot and the leaderboard.

``results.json`` keeps its headline numbers at the top level so any tool can read them without this package
(``schema_version, run_id, name, track, bpb, model_flops, hardware_flops, params, tokens, training_seconds,
mfu``) and the detail in nested objects. There is no second copy of this field list anywhere: the site and
the bot import these models (Marin's generator and site drifted apart, their issue #2255).

Older files are upgraded by :func:`upgrade` step by step; a file newer than this code is rejected.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from runner.config import Author, RunConfig, format_validation_error
from runner.errors import OpenlabError
from runner.safeparse import ParseError, loads_json

SCHEMA_VERSION = 1


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FlopsDetail(Model):
    formula: str
    model_flops_per_token: float = Field(gt=0, description="Forward FLOPs per token.")
    device_kind: str
    chips: int = Field(gt=0)
    peak_flops_per_chip: float | None = Field(
        default=None, gt=0, description="None when the peak is unknown (CPU)."
    )


class EvalSetResult(Model):
    bpb: float = Field(gt=0)
    loss: float = Field(ge=0, description="Mean nats per target token.")
    bytes: int = Field(gt=0)
    tokens: int = Field(gt=0)


class Tracking(Model):
    wandb_mode: Literal["online", "offline", "disabled"]
    wandb_run_id: str | None = None
    wandb_url: str | None = None


class Provenance(Model):
    git_sha: str | None = None
    git_dirty: bool | None = None
    git_remote: str | None = None
    config_fingerprint: str
    data_fingerprint: str
    versions: dict[str, str] = {}
    devices: list[str] = []
    host: str | None = None
    argv: list[str] = []
    started_at: datetime
    finished_at: datetime
    pr: int | None = None
    issue: int | None = None
    issue_url: str | None = Field(default=None, description="The preregistration issue, set by the bot.")
    execution_url: str | None = None


class Attestation(Model):
    """Who ran it. Signed by the lab key when the bot's scheduler ran the job; null when self-reported."""

    run_id: str
    sha: str
    config_fingerprint: str
    scheduler_started_at: datetime
    scheduler_finished_at: datetime
    signer: str = Field(description="Key id: sha256 of the raw public key, first 16 hex chars.")
    algorithm: Literal["ed25519"] = "ed25519"
    signature: str | None = Field(default=None, description="Base64 Ed25519 signature of signed_payload().")
    path: str | None = Field(default=None, description=(
        "Repository path the bot commits this results file to; a signed copy found elsewhere does not verify."))


class Results(Model):
    schema_version: Literal[1] = SCHEMA_VERSION
    run_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    track: str
    bpb: float = Field(gt=0, description="BPB on the primary (first) eval set.")
    model_flops: float = Field(gt=0)
    hardware_flops: float | None = Field(default=None, gt=0)
    params: int = Field(gt=0)
    tokens: int = Field(gt=0)
    training_seconds: float = Field(ge=0)
    mfu: float | None = Field(default=None, ge=0, description="model_flops / hardware_flops, a fraction.")
    author: Author | None = None
    description: str = ""
    config: RunConfig
    flops: FlopsDetail
    eval: dict[str, EvalSetResult]
    tracking: Tracking
    provenance: Provenance
    attestation: Attestation | None = None

    @field_validator("bpb", "model_flops", "hardware_flops", "training_seconds", "mfu")
    @classmethod
    def _finite(cls, v: float | None) -> float | None:
        if v is not None and not math.isfinite(v):
            raise ValueError("must be a finite number")
        return v

    @field_validator("eval")
    @classmethod
    def _some_eval(cls, v: dict[str, EvalSetResult]) -> dict[str, EvalSetResult]:
        if not v:
            raise ValueError("at least one eval set is needed")
        return v

    def signed_payload(self) -> bytes:
        """The exact bytes an attestation signs: the whole results file, every field the site or a comment shows
        (author, affiliation, description, links, config, metrics, provenance...) and the attestation with its
        run id, SHA and results path; only the signature itself is left out."""
        if self.attestation is None:
            raise ValueError("no attestation to sign")
        body = self.model_dump(mode="json", exclude={"attestation": {"signature"}})
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


HEADLINE_KEYS = {
    "schema_version",
    "run_id",
    "name",
    "track",
    "bpb",
    "model_flops",
    "hardware_flops",
    "params",
    "tokens",
    "training_seconds",
    "mfu",
}


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """Bring an older results dict up to SCHEMA_VERSION. Version 1 is the first; add steps here as it moves."""
    version = data.get("schema_version")
    if version == SCHEMA_VERSION:
        return data
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise ValueError(
            f"schema_version {version} is newer than this openlab understands ({SCHEMA_VERSION})"
        )
    raise ValueError(f"schema_version {version!r} is not a known version")


class ResultsError(OpenlabError):
    """A results file is unreadable or does not match the schema."""


def parse_results(data: Any, source: str = "results") -> Results:
    if not isinstance(data, dict):
        raise ResultsError(f"{source}: expected a JSON object")
    try:
        return Results.model_validate(upgrade(data))
    except ValueError as err:
        if isinstance(err, ValidationError):
            raise ResultsError(format_validation_error(err, source)) from None
        raise ResultsError(f"{source}: {err}") from None


def loads_results(text: str | bytes, source: str = "results") -> Results:
    try:  # depth-bounded: a results file is the output of PR code
        data = loads_json(text, source, parse_constant=_reject_constant)
    except ParseError as err:
        raise ResultsError(str(err)) from None
    except ValueError as err:
        raise ResultsError(f"{source}: not valid JSON: {err}") from None
    return parse_results(data, source)


def load_results(path: str | Path) -> Results:
    p = Path(path)
    try:
        text = p.read_bytes()
    except OSError as err:
        raise ResultsError(f"{p}: cannot read: {err.strerror or err}") from None
    return loads_results(text, str(p))


def dumps_results(results: Results) -> str:
    return results.model_dump_json(indent=2) + "\n"


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not allowed in results")


class PlanStep(Model):
    """One step of an experiment plan, as `openlab plan` prints it and the bot posts it.

    Plans of PR code come out of the sandbox as untrusted data: every string and list is bounded (generously: the
    bounds stop abuse, not real plans; the 1 MiB cap on what a plan prints bounds the whole).
    """

    name: str = Field(max_length=200)
    version: str = Field(max_length=100)
    identity: str = Field(max_length=300, description="name@version: the step's stable identity.")
    kind: str = Field(max_length=100, description="What the step does, e.g. 'train', 'tokenize', 'fasttext_filter'.")
    fingerprint: str = Field(max_length=128, description="sha256 of the resolved config.")
    config: dict[str, Any] = Field(max_length=500)
    dependencies: list[str] = Field(max_length=500, description="Identities (name@version) of the steps this one reads.")
    output_path: str = Field(max_length=1000)
    resources: dict[str, float] = Field(default={}, max_length=50)
    action: Literal["run", "skip", "wait"]
    reason: str = Field(max_length=4000)
    model_flops: float | None = None
    tokens: int | None = None

    @field_validator("dependencies")
    @classmethod
    def _short_ids(cls, v: list[str]) -> list[str]:
        if any(len(d) > 300 for d in v):
            raise ValueError("a dependency identity is longer than 300 characters")
        return v


class Plan(Model):
    schema_version: Literal[1] = 1
    experiment: str = Field(max_length=500, description="The experiment file, relative to the repo root when possible.")
    prefix: str = Field(max_length=1000)
    steps: list[PlanStep] = Field(max_length=2000)
    total_model_flops: float = 0.0
    total_tokens: int = 0
    warnings: list[str] = Field(default=[], max_length=2000)

    @field_validator("warnings")
    @classmethod
    def _short_warnings(cls, v: list[str]) -> list[str]:
        if any(len(w) > 4000 for w in v):
            raise ValueError("a warning is longer than 4000 characters")
        return v


# --- Imported results: runs the lab did not run (``openlab leaderboard import``) ---------------------------

IMPORTED_SCHEMA_VERSION = 1
ImportFormat = Literal["marin-run_related_info", "marin-speedrun_config", "marin-run_info", "marin-leaderboard"]


class ImportSource(Model):
    """Where an imported run came from, so a reader can open the original."""

    format: ImportFormat = Field(
        description="marin-run_related_info: Marin's first speedrun_results.json (run_related_info + "
        "run_stats); marin-speedrun_config: its short-lived middle one; marin-run_info: its later one (runs[].run_info); marin-leaderboard: Marin's site data "
        "(data/runs.json, one LeaderboardEntry per run)."
    )
    path: str = Field(min_length=1, description="The file, relative to the imported folder.")
    index: int = Field(ge=0, description="Position of the run in the file's list.")
    repo: str | None = Field(default=None, description="Repository the file was read from, when given.")
    commit: str | None = Field(default=None, description="Commit of that repository, when given.")
    imported_at: datetime


class ImportedResults(Model):
    """One run whose numbers another lab recorded: Marin's fields as Marin wrote them, nothing invented.

    Shown on the leaderboard marked *imported* (never verified). Every measurement is optional except
    the BPB, because Marin's formats differ in what they record: the first format has no model FLOPs
    (only a 6ND estimate, kept as ``flops_6nd``), and a field a file lacks stays ``None``.
    """

    kind: Literal["imported"] = "imported"
    schema_version: Literal[1] = IMPORTED_SCHEMA_VERSION
    run_id: str = Field(min_length=1)
    name: str = Field(min_length=1, description="Marin's run_name: the run folder under experiments/speedrun.")
    bpb: float = Field(gt=0, description="Paloma c4_en BPB (Marin's eval/paloma/c4_en/bpb).")
    eval_set: str = "paloma/c4_en"
    model_flops: float | None = Field(default=None, gt=0)
    model_flops_per_token: float | None = Field(default=None, gt=0)
    hardware_flops: float | None = Field(default=None, gt=0)
    flops_6nd: float | None = Field(default=None, gt=0, description="Marin's pre_run_flops_estimate (6·N·D).")
    params: int | None = Field(default=None, gt=0)
    tokens: int | None = Field(default=None, gt=0)
    training_seconds: float | None = Field(default=None, ge=0)
    num_devices: int | None = Field(default=None, gt=0)
    num_chips: int | None = Field(default=None, gt=0)
    device_flops: float | None = Field(default=None, gt=0)
    author: Author | None = None
    description: str = ""
    wandb_url: str | None = None
    finished_at: datetime | None = None
    tokenized_dataset: str | None = None
    model_config_: dict[str, Any] | None = Field(default=None, alias="model_config")
    train_config: dict[str, Any] | None = None
    resources: dict[str, Any] | None = None
    source: ImportSource

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    @field_validator("bpb", "model_flops", "hardware_flops", "training_seconds", "flops_6nd", "device_flops")
    @classmethod
    def _finite(cls, v: float | None) -> float | None:
        if v is not None and not math.isfinite(v):
            raise ValueError("must be a finite number")
        return v

    @property
    def mfu(self) -> float | None:
        if self.model_flops is None or not self.hardware_flops:
            return None
        return self.model_flops / self.hardware_flops


def parse_imported(data: Any, source: str = "imported results") -> ImportedResults:
    if not isinstance(data, dict):
        raise ResultsError(f"{source}: expected a JSON object")
    version = data.get("schema_version")
    if isinstance(version, int) and version > IMPORTED_SCHEMA_VERSION:
        raise ResultsError(
            f"{source}: imported schema_version {version} is newer than this openlab understands "
            f"({IMPORTED_SCHEMA_VERSION})"
        )
    try:
        return ImportedResults.model_validate(data)
    except ValidationError as err:
        raise ResultsError(format_validation_error(err, source)) from None


def loads_any_results(text: str | bytes, source: str = "results") -> Results | ImportedResults:
    """A results file of either kind: a run of this lab (:class:`Results`) or an imported one."""
    try:  # depth-bounded, like loads_results: an imported file is untrusted too
        data = loads_json(text, source, parse_constant=_reject_constant)
    except ParseError as err:
        raise ResultsError(str(err)) from None
    except ValueError as err:
        raise ResultsError(f"{source}: not valid JSON: {err}") from None
    if isinstance(data, dict) and data.get("kind") == "imported":
        return parse_imported(data, source)
    return parse_results(data, source)


def dumps_imported(results: ImportedResults) -> str:
    return results.model_dump_json(indent=2, by_alias=True) + "\n"
