"""The bot's view of a training job on Ray, and the one adapter onto the executor's Ray Jobs functions.

The bot never talks to Ray itself: `runner.executor` owns submission (``submission_id`` = run id, working dir =
a checkout of exactly the approved SHA), status and cancellation. This module turns their answers into the small
typed :class:`JobInfo` the dispatcher and reconciler reason about, and turns "Ray cannot be reached" into
:class:`BackendUnavailable`, the one error that means *keep the run queued and retry later*.
"""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
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


class JobRejected(Exception):
    """Ray (or the executor) refused this job for a reason retrying will not fix (e.g. the file is not at the SHA)."""


# Transient answers: nothing listens, the dashboard is up but its job agent is not (yet), a proxy in between.
_UNAVAILABLE = ("cannot reach", "cannot use the ray jobs api", "connection", "timed out", "no available agent",
                "status code 500", "status code 502", "status code 503", "status code 504")


class RayJobs:
    """Adapter onto ``runner.executor.dispatch`` (``submit``/``status``/``cancel``/``logs``), the executor's
    Ray Jobs API wrappers. Their errors are sorted here: unreachable -> :class:`BackendUnavailable` (retry),
    unknown submission id -> ``MISSING``, anything else at submit -> :class:`JobRejected` (report, no retry)."""

    def __init__(self, address: str | None = None, dashboard_url: str | None = None,
                 mirror_dir: str | Path | None = None) -> None:
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.dashboard_url = dashboard_url or os.environ.get("OPENLAB_RAY_DASHBOARD_URL") or None
        self.mirror_dir = Path(mirror_dir or os.environ.get("OPENLAB_MIRROR_DIR")
                               or Path.home() / ".cache" / "openlab" / "mirrors")

    @staticmethod
    def _unavailable(err: Exception) -> bool:
        from runner.executor.ray_env import RayConnectError

        text = str(err).lower()
        return isinstance(err, RayConnectError | ConnectionError | TimeoutError) or any(k in text for k in _UNAVAILABLE)

    def _link(self, run_id: str) -> str | None:
        return f"{self.dashboard_url.rstrip('/')}/#/jobs/{run_id}" if self.dashboard_url else None

    def submit(self, spec: JobSpec) -> JobInfo:
        from runner.errors import OpenlabError
        from runner.executor import dispatch

        try:
            checkout = self._mirror(spec)
            dispatch.submit(spec.experiment, spec.sha, address=self.address, prefix=spec.prefix,
                            run_id=spec.run_id, repo=checkout, env_vars=dict(spec.env))
        except OpenlabError as err:
            if self._unavailable(err):
                raise BackendUnavailable(str(err)) from None
            if "already submitted" not in str(err):
                raise JobRejected(str(err)) from None
        return self.info(spec.run_id)

    def info(self, run_id: str) -> JobInfo:
        from runner.errors import OpenlabError
        from runner.executor import dispatch

        try:
            state = dispatch.status(run_id, address=self.address)
        except OpenlabError as err:
            if "no ray job" in str(err).lower():
                return job_info(run_id, None)
            raise BackendUnavailable(str(err)) from None
        return JobInfo(run_id=run_id, state=_state(state.status), message=state.message or "",
                       started_at=state.start_time, finished_at=state.end_time, dashboard_url=self._link(run_id))

    def cancel(self, run_id: str) -> None:
        from runner.errors import OpenlabError
        from runner.executor import dispatch

        try:
            dispatch.cancel(run_id, address=self.address)
        except OpenlabError as err:
            if "no ray job" in str(err).lower():
                return  # never started (or already gone): nothing to stop
            raise BackendUnavailable(str(err)) from None

    def logs_tail(self, run_id: str, lines: int = 60) -> str:
        from runner.errors import OpenlabError
        from runner.executor import dispatch

        try:
            text = dispatch.logs(run_id, address=self.address)
        except OpenlabError:
            return ""
        return "\n".join(str(text).splitlines()[-lines:])

    def _mirror(self, spec: JobSpec) -> Path:
        """A local clone holding ``spec.sha`` (fetched from ``spec.source``) for the executor to archive."""
        if spec.source and Path(spec.source).is_dir() and _git_ok(Path(spec.source), "cat-file", "-e",
                                                                     f"{spec.sha}^{{commit}}"):
            return Path(spec.source)
        if not spec.source:
            return Path(".")
        dest = self.mirror_dir / spec.repo.replace("/", "__")
        if not (dest / ".git").is_dir():
            dest.mkdir(parents=True, exist_ok=True)
            _git(dest, "init", "-q")
        # By SHA first (GitHub allows it for reachable commits); else the PR's head ref and the branches.
        if not _git_ok(dest, "cat-file", "-e", f"{spec.sha}^{{commit}}") and not _git_ok(
                dest, "fetch", "-q", "--no-tags", spec.source, spec.sha):
            _git(dest, "fetch", "-q", "--no-tags", spec.source, f"+refs/pull/{spec.pr}/head:refs/pr/{spec.pr}",
                 "+refs/heads/*:refs/src/*")
        return dest


def _git_ok(cwd: Path, *args: str) -> bool:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=300).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _git(cwd: Path, *args: str) -> None:
    from runner.errors import OpenlabError

    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as err:
        raise OpenlabError(f"git {args[0]}: {err}") from None
    if out.returncode != 0:
        raise OpenlabError(f"git {args[0]} failed: {out.stderr.strip()[-300:]}")
