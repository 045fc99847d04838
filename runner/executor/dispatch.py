"""Submitting a whole experiment to a Ray cluster as one Ray job; its status; cancelling it.

This is what the bot calls. ``submission_id`` is the run id, a pure function of (repo, PR, SHA, experiment,
attempt), so a repeated submission is refused by Ray instead of running twice. The job's ``working_dir`` is a
``git archive`` of exactly the approved SHA, never the submitter's working tree; inside the job the driver runs
``python -m runner.cli run EXPERIMENT --prefix P --run-id RUN_ID`` against the cluster (``RAY_ADDRESS`` is set
by Ray for job drivers), so the code that runs is the code at that SHA.

Authentication: Ray's token auth reads ``RAY_AUTH_MODE=token`` and ``RAY_AUTH_TOKEN`` (or
``RAY_AUTH_TOKEN_PATH``) from the environment of the caller; the bot holds the token, the PR code never does.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tarfile
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from runner.errors import OpenlabError
from runner.executor.launch import resolve_prefix
from runner.executor.ray_env import check_reachable, job_env

DEFAULT_DASHBOARD = "http://127.0.0.1:8265"
JobStatusName = Literal["PENDING", "RUNNING", "STOPPED", "SUCCEEDED", "FAILED"]
TERMINAL: frozenset[str] = frozenset({"STOPPED", "SUCCEEDED", "FAILED"})


class DispatchError(OpenlabError):
    """Submitting, querying or stopping a Ray job failed."""


class Submission(BaseModel):
    run_id: str
    address: str
    sha: str
    experiment: str
    prefix: str
    entrypoint: str
    experiment_record: str  # where the run's ExperimentRecord will be written


class JobState(BaseModel):
    run_id: str
    status: JobStatusName
    terminal: bool
    message: str | None = None
    entrypoint: str | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    metadata: dict[str, str] = {}


def _slug(text: str, limit: int) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-") or "x"


RUN_ID_PATTERN = r"olr-[a-z0-9-]+-a\d+-[0-9a-f]{10}"


def run_id(repo: str, pr: int | None, sha: str, experiment: str, attempt: int = 1) -> str:
    """The run id (= Ray submission id = W&B run id) of one attempt: readable, short, unique per its inputs.

    ``olr-<experiment stem>-pr<N>-<sha7>-a<attempt>-<hash10>``, at most 64 characters (ledger column, W&B id);
    the hash covers the exact five inputs (repo included), so ids that read alike still differ.
    """
    if attempt < 1:
        raise ValueError("attempt counts from 1")
    exact = "\0".join([repo, str(pr), sha.lower(), experiment, str(attempt)])
    digest = hashlib.sha256(exact.encode()).hexdigest()[:10]
    pr_part = f"pr{pr}" if pr is not None else "main"
    return f"olr-{_slug(Path(experiment).stem, 20)}-{pr_part}-{sha.lower()[:7]}-a{attempt}-{digest}"


def _address(address: str | None) -> str:
    addr = (
        address
        or os.environ.get("RAY_API_SERVER_ADDRESS")
        or os.environ.get("RAY_ADDRESS")
        or DEFAULT_DASHBOARD
    )
    if addr.startswith("ray://") or "://" not in addr:
        # The Jobs API lives on the dashboard (port 8265), not on the GCS or client port.
        host = addr.removeprefix("ray://").split(":")[0]
        addr = f"http://{host}:8265"
    return addr


def _client(address: str | None) -> Any:
    addr = _address(address)
    check_reachable(addr)
    from ray.job_submission import JobSubmissionClient

    try:
        return JobSubmissionClient(addr)
    except Exception as err:  # noqa: BLE001 - auth, version and connection failures all end here
        raise DispatchError(f"cannot use the Ray Jobs API at {addr}: {str(err).splitlines()[0]}") from None


def _git(repo: Path, *args: str) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=60)
    except subprocess.CalledProcessError as err:
        raise DispatchError(f"git {' '.join(args)}: {err.stderr.strip() or err}") from None
    except OSError as err:
        raise DispatchError(f"git is not available: {err}") from None
    return out.stdout.strip()


def checkout(repo: str | Path, sha: str, dest: Path) -> str:
    """Write exactly the tree of ``sha`` into ``dest`` (no .git, nothing uncommitted); return the full SHA."""
    full = _git(Path(repo), "rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}")
    if not full:
        raise DispatchError(f"{sha} is not a commit of {repo}")
    tar = dest.parent / f"{dest.name}.tar"
    _git(Path(repo), "archive", "--format=tar", "-o", str(tar), full)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tar) as tf:
        tf.extractall(dest, filter="data")
    tar.unlink()
    return full


def submit(
    experiment: str,
    sha: str,
    *,
    address: str | None = None,
    prefix: str | None = None,
    run_id: str | None = None,
    repo: str | Path = ".",
    python: str = "python",
    entrypoint_resources: dict[str, float] | None = None,
    env_vars: dict[str, str] | None = None,
) -> Submission:
    """Submit EXPERIMENT (a path relative to the repo root) at commit SHA as one Ray job."""
    repo_path = Path(_git(Path(repo), "rev-parse", "--show-toplevel"))
    rel = Path(experiment)
    if rel.is_absolute():
        rel = rel.resolve().relative_to(repo_path.resolve())
    prefix = resolve_prefix(prefix)
    client = _client(address)
    with tempfile.TemporaryDirectory(prefix="openlab-submit-") as tmp:
        tree = Path(tmp) / "src"
        full = checkout(repo_path, sha, tree)
        if not (tree / rel).is_file():
            raise DispatchError(f"{rel} does not exist at commit {full[:12]}")
        rid = run_id or f"openlab-{_slug(rel.stem, 40)}-{full[:8]}-{datetime.now(UTC):%Y%m%d%H%M%S}"
        entrypoint = f"{python} -m runner.cli run {rel} --prefix {prefix} --run-id {rid}"
        remote = subprocess.run(
            ["git", "config", "--get", "remote.origin.url"], cwd=repo_path, capture_output=True, text=True
        ).stdout.strip()
        runtime_env = {
            "working_dir": str(tree),
            "excludes": [".git", "tests/", "**/*.pack", "out/", ".venv/"],
            "env_vars": job_env({"OPENLAB_GIT_COMMIT": full, "OPENLAB_GIT_REMOTE": remote, **(env_vars or {})}),
        }
        kwargs = {
            "entrypoint": entrypoint,
            "submission_id": rid,
            "runtime_env": runtime_env,
            "metadata": {"experiment": str(rel), "sha": full, "prefix": prefix},
            "entrypoint_resources": entrypoint_resources,
        }
        _submit_with_retry(client, rid, kwargs)
    from runner.executor.engine import experiment_record_path

    return Submission(
        run_id=rid,
        address=_address(address),
        sha=full,
        experiment=str(rel),
        prefix=prefix,
        entrypoint=entrypoint,
        experiment_record=experiment_record_path(prefix, rid),
    )


def _submit_with_retry(client: Any, rid: str, kwargs: dict[str, Any], attempts: int = 6) -> None:
    """A head that just started may have no job agent yet ("No available agent"): retry that, nothing else."""
    for i in range(attempts):
        try:
            client.submit_job(**kwargs)
            return
        except Exception as err:  # noqa: BLE001 - the Jobs API reports everything as RuntimeError text
            text = str(err)
            if "already exists" in text:
                raise DispatchError(f"run {rid} was already submitted; Ray refuses to run it twice") from None
            if "No available agent" not in text or i == attempts - 1:
                raise DispatchError(f"submitting {rid}: {_last_line(text)}") from None
            time.sleep(2 * (i + 1))


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip() and ln.strip() != "."]
    return lines[-1] if lines else text


def _ts(ms: int | None) -> datetime | None:
    return datetime.fromtimestamp(ms / 1000, UTC) if ms else None


def status(run_id: str, *, address: str | None = None) -> JobState:
    client = _client(address)
    try:
        info = client.get_job_info(run_id)
    except Exception as err:  # noqa: BLE001
        if "does not exist" in str(err):
            raise DispatchError(f"no Ray job with run id {run_id} at {_address(address)}") from None
        raise DispatchError(f"status of {run_id}: {_last_line(str(err))}") from None
    name = str(getattr(info.status, "value", info.status))
    return JobState(
        run_id=run_id,
        status=name,  # type: ignore[arg-type]
        terminal=name in TERMINAL,
        message=info.message,
        entrypoint=info.entrypoint,
        start_time=_ts(info.start_time),
        end_time=_ts(info.end_time),
        metadata=dict(info.metadata or {}),
    )


def active(*, address: str | None = None) -> list[JobState]:
    """Every openlab job on the cluster that has not finished (submitted with our metadata), oldest first."""
    client = _client(address)
    try:
        jobs = client.list_jobs()
    except Exception as err:  # noqa: BLE001
        raise DispatchError(f"list jobs at {_address(address)}: {_last_line(str(err))}") from None
    out = []
    for info in jobs:
        meta = dict(info.metadata or {})
        name = str(getattr(info.status, "value", info.status))
        if not info.submission_id or "experiment" not in meta or "sha" not in meta or name in TERMINAL:
            continue
        out.append(JobState(run_id=info.submission_id, status=name, terminal=False,  # type: ignore[arg-type]
                            message=info.message, entrypoint=info.entrypoint, start_time=_ts(info.start_time),
                            end_time=None, metadata=meta))
    return sorted(out, key=lambda j: (j.start_time is None, j.start_time or datetime.now(UTC)))


def dashboard_url(address: str | None = None) -> str:
    """The Ray dashboard's base URL for links (the Jobs API address is the dashboard)."""
    return _address(address).rstrip("/")


def cancel(run_id: str, *, address: str | None = None) -> JobState:
    """Ask Ray to stop the job (asynchronous); return its state right after."""
    client = _client(address)
    current = status(run_id, address=address)
    if not current.terminal:
        try:
            client.stop_job(run_id)
        except Exception as err:  # noqa: BLE001
            raise DispatchError(f"cancel {run_id}: {_last_line(str(err))}") from None
    return status(run_id, address=address)


def logs(run_id: str, *, address: str | None = None) -> str:
    client = _client(address)
    try:
        return client.get_job_logs(run_id)
    except Exception as err:  # noqa: BLE001
        raise DispatchError(f"logs of {run_id}: {_last_line(str(err))}") from None
