"""The bot's view of a training job on Ray, and the one adapter onto the executor's Ray Jobs functions.

The bot never talks to Ray itself: `runner.executor` owns submission (``submission_id`` = run id, working dir =
a checkout of exactly the approved SHA), status and cancellation. This module turns their answers into the small
typed :class:`JobInfo` the dispatcher and reconciler reason about, and turns "Ray cannot be reached" into
:class:`BackendUnavailable`, the one error that means *keep the run queued and retry later*.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict


class JobState(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    STOPPED = "STOPPED"
    MISSING = "MISSING"  # Ray does not know this submission id (never submitted, or the cluster was replaced)

    @property
    def terminal(self) -> bool:
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.STOPPED, JobState.MISSING)


class JobSpec(BaseModel):
    """Everything needed to start one run: the executor turns it into a Ray job."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    repo: str
    pr: int
    sha: str
    experiment: str
    prefix: str
    source: str | None = None  # a git URL or local path holding `sha`; None: the executor's default
    env: dict[str, str] = {}


class JobInfo(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    state: JobState
    message: str = ""
    started_at: datetime | None = None
    finished_at: datetime | None = None
    dashboard_url: str | None = None


class BackendUnavailable(Exception):
    """Ray (or its Jobs API) cannot be reached right now: the run stays queued and is retried with backoff."""


class JobBackend(Protocol):
    def submit(self, spec: JobSpec) -> JobInfo:
        """Start the job; a submission id Ray already has is not an error (returns that job's info)."""

    def info(self, run_id: str) -> JobInfo: ...

    def cancel(self, run_id: str) -> None: ...

    def logs_tail(self, run_id: str, lines: int = 60) -> str: ...


def _ts(value: Any) -> datetime | None:
    """Ray reports times as epoch milliseconds (0 or None when not yet known)."""
    if value in (None, 0):
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromtimestamp(float(value) / 1000.0, UTC)


def _state(value: Any) -> JobState:
    name = str(getattr(value, "value", value) or "").upper()
    return JobState(name) if name in JobState.__members__ else JobState.RUNNING


def job_info(run_id: str, raw: Any, dashboard_url: str | None = None) -> JobInfo:
    """Normalise whatever the executor returns (a Ray ``JobDetails``/``JobInfo``, a dict, or None) to JobInfo."""
    if raw is None:
        return JobInfo(run_id=run_id, state=JobState.MISSING, message="Ray has no job with this id")
    get = raw.get if isinstance(raw, dict) else (lambda k, d=None: getattr(raw, k, d))
    return JobInfo(
        run_id=run_id,
        state=_state(get("status") or get("state")),
        message=str(get("message") or ""),
        started_at=_ts(get("start_time") or get("started_at")),
        finished_at=_ts(get("end_time") or get("finished_at")),
        dashboard_url=dashboard_url,
    )


class RayJobs:
    """Adapter onto ``runner.executor``'s Ray Jobs functions (``submit``/``status``/``cancel``/``logs``)."""

    def __init__(self, address: str | None = None, dashboard_url: str | None = None) -> None:
        self.address = address or os.environ.get("RAY_ADDRESS")
        self.dashboard_url = dashboard_url or os.environ.get("OPENLAB_RAY_DASHBOARD_URL") or None

    def _api(self) -> Any:
        from runner.executor import jobs  # the executor's Ray Jobs API wrappers (issue 3)

        return jobs

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        from runner.executor.ray_env import RayConnectError

        try:
            return getattr(self._api(), name)(*args, address=self.address, **kwargs)
        except RayConnectError as err:
            raise BackendUnavailable(str(err)) from None
        except (ConnectionError, TimeoutError, OSError) as err:
            raise BackendUnavailable(f"Ray Jobs API unreachable: {err}") from None

    def _link(self, run_id: str) -> str | None:
        return f"{self.dashboard_url.rstrip('/')}/#/jobs/{run_id}" if self.dashboard_url else None

    def submit(self, spec: JobSpec) -> JobInfo:
        self._call(
            "submit", spec.experiment, sha=spec.sha, run_id=spec.run_id, prefix=spec.prefix,
            source=spec.source, env=dict(spec.env),
        )
        return self.info(spec.run_id)

    def info(self, run_id: str) -> JobInfo:
        return job_info(run_id, self._call("status", run_id), self._link(run_id))

    def cancel(self, run_id: str) -> None:
        self._call("cancel", run_id)

    def logs_tail(self, run_id: str, lines: int = 60) -> str:
        try:
            text = str(self._call("logs", run_id) or "")
        except BackendUnavailable:
            return ""
        return "\n".join(text.splitlines()[-lines:])
