"""What runs inside a step's Ray task: lease, RUNNING, the function with a heartbeat, record, SUCCESS.

Status and lease are written here, by the process that runs the function, not by the launcher: if the worker
dies, its heartbeat stops and the lease goes stale, and the next launch takes the step over. ``SUCCESS`` is the
last write, after the step record; a step killed anywhere before that is never marked done.

A step function must tolerate finding a previous attempt's partial files in its output folder (write each
file atomically, or resume from them as the trainer does from checkpoints).
"""

from __future__ import annotations

import logging
import traceback
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter

from runner.errors import OpenlabError
from runner.executor import state
from runner.executor.records import LaunchInfo, StepRecord, StepStatus, utcnow
from runner.executor.step import SELF, Step, StepContext, resolve_config, substitute
from runner.logs import ensure_logging, log_context, log_event

log = logging.getLogger("openlab.executor")

@dataclass
class StepTask:
    step: Step
    output_path: str
    dep_paths: dict[str, str]
    launch: LaunchInfo
    config: Any  # the config with real paths, built by the launcher (see resolved_task)
    config_json: Any
    lease_timeout_s: float = state.LEASE_TIMEOUT_S
    heartbeat_s: float = state.HEARTBEAT_S
    force: bool = False  # run even when SUCCESS (dev versions)


@dataclass
class TaskResult:
    identity: str
    outcome: Literal["succeeded", "failed", "skipped", "held"]
    message: str = ""
    started_at: datetime = field(default_factory=utcnow)
    finished_at: datetime = field(default_factory=utcnow)


def execute(task: StepTask) -> TaskResult:
    ensure_logging()  # in a Ray worker: JSON lines keyed by run id and step, in the job's logs
    with log_context(run_id=task.launch.run_id, step=task.step.identity):
        result = _execute(task)
        log_event(log, "step finished", outcome=result.outcome, message=result.message[:300])
        return result


def _execute(task: StepTask) -> TaskResult:
    step, out = task.step, task.output_path
    started = utcnow()
    current = state.read_status(out)
    if current is not None and current.status == StepStatus.SUCCESS and not task.force:
        return TaskResult(step.identity, "skipped", "already SUCCESS (finished by another launch)", started)
    me = state.worker_id()
    try:
        lease = state.acquire_lease(out, me, task.launch.run_id, task.lease_timeout_s)
    except state.LeaseHeld as held:
        return TaskResult(step.identity, "held", str(held), started)
    record = _record(task, me, started)
    try:
        state.write_status(out, StepStatus.RUNNING, task.launch.run_id, me)
        state.write_step_record(out, record)
        config = task.config
        ctx = StepContext(step.name, step.version, out, task.launch.run_id, dict(task.dep_paths))
        with state.Heartbeat(out, lease, task.heartbeat_s):
            result = step.fn(config, ctx)
        record.result = _jsonable(result)
    except Exception as err:  # noqa: BLE001 - any failure of user code is recorded, not raised
        message = str(err) if isinstance(err, OpenlabError) else f"{type(err).__name__}: {err}"
        record.status, record.finished_at = StepStatus.FAILED, utcnow()
        record.error = traceback.format_exc()[-8000:]
        _finish(out, record, me, message)
        return TaskResult(step.identity, "failed", message, started, record.finished_at)
    record.status, record.finished_at = StepStatus.SUCCESS, utcnow()
    _finish(out, record, me, "")
    return TaskResult(step.identity, "succeeded", "", started, record.finished_at)


def _finish(out: str, record: StepRecord, me: str, message: str) -> None:
    state.write_step_record(out, record)
    state.write_status(out, record.status, record.launch.run_id, me, message)
    state.release_lease(out, me)


def _record(task: StepTask, me: str, started: datetime) -> StepRecord:
    step = task.step
    return StepRecord(
        name=step.name,
        version=step.version,
        identity=step.identity,
        kind=step.kind,
        fn=step.fn_name(),
        description=step.description,
        defined_at=step.defined_at,
        fingerprint=step.fingerprint,
        fingerprint_payload=step.fingerprint_payload,
        config=task.config_json,
        deps=list(step.referenced),
        dep_paths=dict(task.dep_paths),
        output_path=task.output_path,
        resources=step.resources.flat(),
        status=StepStatus.RUNNING,
        launch=task.launch,
        worker=me,
        started_at=started,
    )


def resolved_config(step: Step, out: str, dep_paths: dict[str, str]) -> tuple[Any, Any]:
    """The config with step:// references replaced by real paths, as an object and as JSON.

    Built in the launcher: a config class defined in an experiment file travels to workers by value, and
    pydantic cannot rebuild schemas from such copies of dataclasses, so workers receive ready objects.
    """
    resolved = substitute(step.config_json, {**dep_paths, SELF: out})
    return resolve_config(step.config, resolved), resolved


def _jsonable(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    try:
        return TypeAdapter(Any).dump_python(value, mode="json")
    except Exception:  # noqa: BLE001 - an unserialisable result is kept as text
        return repr(value)
