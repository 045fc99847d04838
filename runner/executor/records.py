"""The executor's files, as pydantic models: the only definition of their fields.

Every step's output folder ``{prefix}/{name}/{version}/`` holds three small JSON files next to the step's own
outputs:

- ``.status.json`` (:class:`StatusRecord`): ``RUNNING``, ``SUCCESS`` or ``FAILED``. ``SUCCESS`` is written
  last, after the step function returned and its provenance record was written, so a folder marked done is
  never half-written.
- ``.lease.json`` (:class:`LeaseRecord`): who is running the step and when it last said so. A lease whose
  heartbeat is older than its ``timeout_s`` is stale: its runner died and another launch may take the step over.
- ``.step.json`` (:class:`StepRecord`): provenance of the last attempt (identity, fingerprint and payload,
  resolved config, dependencies as ``name@version``, git state, user, argv, timestamps, Ray job id, result).

Every launch writes one :class:`ExperimentRecord` at ``{prefix}/experiments/{run_id}.json``, listing every step
with what happened to it. These files are the provenance graph the bot and the site link to; they read them
through these models (``parse_*`` below), never through a copied field list. ``schema_version`` moves only
with an incompatible change; new optional fields are added without bumping it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runner.config import format_validation_error
from runner.errors import OpenlabError
from runner.safeparse import ParseError, loads_json

RECORD_SCHEMA_VERSION = 1

STATUS_FILE = ".status.json"
LEASE_FILE = ".lease.json"
STEP_RECORD_FILE = ".step.json"
EXPERIMENTS_DIR = "experiments"


def utcnow() -> datetime:
    return datetime.now(UTC)


class Record(BaseModel):
    # Readers ignore fields they do not know, so a newer writer adding an optional field does not break them.
    model_config = ConfigDict(extra="ignore")


class StepStatus(StrEnum):
    RUNNING = "RUNNING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"


class StatusRecord(Record):
    schema_version: Literal[1] = RECORD_SCHEMA_VERSION
    status: StepStatus
    run_id: str
    worker: str = Field(description="host-pid-nonce of the process that wrote it.")
    updated_at: datetime = Field(default_factory=utcnow)
    message: str = ""


class LeaseRecord(Record):
    schema_version: Literal[1] = RECORD_SCHEMA_VERSION
    owner: str = Field(description="host-pid-nonce of the runner holding the step.")
    run_id: str
    acquired_at: datetime
    heartbeat_at: datetime
    timeout_s: float = Field(gt=0, description="The lease is stale once heartbeat_at is older than this.")

    def age_s(self, now: datetime | None = None) -> float:
        return ((now or utcnow()) - self.heartbeat_at).total_seconds()

    def is_stale(self, now: datetime | None = None) -> bool:
        return self.age_s(now) > self.timeout_s


class GitInfo(Record):
    remote: str | None = None
    commit: str | None = None
    branch: str | None = None
    dirty: bool | None = None


class LaunchInfo(Record):
    """Who launched what, from where: shared by every record of one launch."""

    run_id: str
    experiment: str = Field(description="The experiment file, relative to the repo root when possible.")
    prefix: str
    git: GitInfo = GitInfo()
    user: str | None = None
    host: str | None = None
    argv: list[str] = []
    ray_job_id: str | None = None
    ray_address: str | None = None
    pr: int | None = Field(default=None, description="The pull request the bot ran this for (OPENLAB_PR).")


class StepRecord(Record):
    """Provenance of one step attempt: ``{output_path}/.step.json``."""

    schema_version: Literal[1] = RECORD_SCHEMA_VERSION
    name: str
    version: str
    identity: str = Field(description="name@version")
    kind: str
    fn: str = Field(description="module.qualname of the step function (not part of identity).")
    description: str = ""
    defined_at: str | None = Field(default=None, description="file:line where the step was declared.")
    fingerprint: str = Field(description="sha256 of fingerprint_payload's canonical JSON.")
    fingerprint_payload: dict[str, Any]
    config: dict[str, Any] = Field(description="The resolved config the function received (real paths).")
    deps: list[str] = Field(description="Dependencies as name@version.")
    dep_paths: dict[str, str] = {}
    output_path: str
    resources: dict[str, float] = {}
    status: StepStatus
    launch: LaunchInfo
    worker: str
    started_at: datetime
    finished_at: datetime | None = None
    result: Any = None
    error: str | None = None


StepOutcome = Literal["pending", "running", "succeeded", "skipped", "failed", "blocked", "waiting"]


class ExperimentStep(Record):
    identity: str
    kind: str
    output_path: str
    action: Literal["run", "skip", "wait"]
    reason: str
    outcome: StepOutcome = "pending"
    error: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


class ExperimentRecord(Record):
    """One launch of an experiment: ``{prefix}/experiments/{run_id}.json``."""

    schema_version: Literal[1] = RECORD_SCHEMA_VERSION
    launch: LaunchInfo
    status: Literal["RUNNING", "SUCCESS", "FAILED"] = "RUNNING"
    started_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    steps: list[ExperimentStep]
    failures: list[str] = []
    warnings: list[str] = []


class RecordError(OpenlabError):
    """An executor file is unreadable or does not match its model."""


R = TypeVar("R", bound=Record)


def parse_record(model: type[R], text: str | bytes, source: str) -> R:
    try:  # depth-bounded: step code (a PR's, once approved) can write these files
        data = loads_json(text, source)
    except ParseError as err:
        raise RecordError(str(err)) from None
    if not isinstance(data, dict):
        raise RecordError(f"{source}: expected a JSON object")
    version = data.get("schema_version")
    if isinstance(version, int) and version > RECORD_SCHEMA_VERSION:
        raise RecordError(f"{source}: schema_version {version} is newer than this openlab understands")
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise RecordError(format_validation_error(err, source)) from None


def dumps_record(record: Record) -> str:
    return record.model_dump_json(indent=2) + "\n"
