"""Execution pages: every launch the executor recorded, drawn as a DAG of steps with status and provenance.

Reads only through the executor's own models (:mod:`runner.executor.records`): the launch's
``{prefix}/experiments/{run_id}.json`` and, for each step, ``.step.json`` and ``.status.json`` in its output
folder. A record of an unknown (newer) version or a garbled file is skipped with a warning naming it.

Statuses shown are the four a reader cares about: waiting, running, succeeded, failed. The live status file
wins over the launch record when it is newer, so a page rebuilt (or served live by ``openlab browse``)
while a run is going shows it moving.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal

from fsspec.core import url_to_fs
from pydantic import BaseModel

from runner import store
from runner.executor.records import (
    EXPERIMENTS_DIR,
    STATUS_FILE,
    STEP_RECORD_FILE,
    ExperimentRecord,
    RecordError,
    StatusRecord,
    StepRecord,
    parse_record,
)

log = logging.getLogger(__name__)

Shown = Literal["waiting", "running", "succeeded", "failed"]
_OUTCOME: dict[str, Shown] = {
    "pending": "waiting",
    "waiting": "waiting",
    "blocked": "waiting",
    "running": "running",
    "succeeded": "succeeded",
    "skipped": "succeeded",
    "failed": "failed",
}
_LIVE: dict[str, Shown] = {"RUNNING": "running", "SUCCESS": "succeeded", "FAILED": "failed"}

# Wide enough for a typical "<experiment>/<step>-<hash>" identity at 12px; longer ones are shortened with a tooltip.
NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 280, 44, 48, 18, 12
NODE_CHARS = 40


class StepView(BaseModel):
    identity: str
    kind: str
    status: Shown
    note: str
    output_path: str
    deps: list[str] = []
    fingerprint: str | None = None
    config: dict[str, Any] = {}
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    wandb_url: str | None = None
    defined_at: str | None = None
    x: int = 0
    y: int = 0

    @property
    def seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


class Edge(BaseModel):
    x1: int
    y1: int
    x2: int
    y2: int


class ExecutionView(BaseModel):
    run_id: str
    experiment: str
    status: Shown
    prefix: str
    started_at: datetime
    finished_at: datetime | None
    git_commit: str | None
    git_dirty: bool | None
    code_url: str | None
    pr: int | None = None
    pr_url: str | None = None
    user: str | None
    ray_job_id: str | None
    steps: list[StepView]
    edges: list[Edge]
    width: int
    height: int
    failures: list[str]
    warnings: list[str]
    node_w: int = NODE_W
    node_chars: int = NODE_CHARS

    @property
    def running(self) -> bool:
        return self.status in ("running", "waiting")


def https_remote(remote: str | None) -> str | None:
    """git@github.com:o/r.git or https://github.com/o/r(.git) -> https://github.com/o/r; None otherwise."""
    if not remote:
        return None
    m = re.match(r"^(?:git@([^:]+):|https?://(?:[^@/]+@)?([^/]+)/)(.+?)(?:\.git)?/?$", remote)
    if not m:
        return None
    host = m.group(1) or m.group(2)
    return f"https://{host}/{m.group(3)}"


def _find_wandb(obj: Any) -> str | None:
    if isinstance(obj, dict):
        url = obj.get("wandb_url")
        if isinstance(url, str) and url.startswith("https://"):
            return url
        for v in obj.values():
            found = _find_wandb(v)
            if found:
                return found
    return None


def _read_optional(model: type, url: str) -> Any:
    try:
        return parse_record(model, store.read_bytes(url), url)
    except FileNotFoundError:
        return None
    except (RecordError, OSError) as err:
        log.warning("skipping %s: %s", url, err)
        return None


def _layout(steps: list[StepView]) -> tuple[list[Edge], int, int]:
    """Layered layout: a step's column is one more than its deepest dependency's (steps come in topo order)."""
    col: dict[str, int] = {}
    for s in steps:
        col[s.identity] = 1 + max((col[d] for d in s.deps if d in col), default=-1)
    rows: dict[int, int] = {}
    for s in steps:
        c = col[s.identity]
        r = rows.get(c, 0)
        rows[c] = r + 1
        s.x, s.y = PAD + c * (NODE_W + GAP_X), PAD + r * (NODE_H + GAP_Y)
    by_id = {s.identity: s for s in steps}
    edges = [
        Edge(x1=by_id[d].x + NODE_W, y1=by_id[d].y + NODE_H // 2, x2=s.x, y2=s.y + NODE_H // 2)
        for s in steps
        for d in s.deps
        if d in by_id
    ]
    width = PAD * 2 + (max(col.values(), default=0) + 1) * (NODE_W + GAP_X) - GAP_X
    height = PAD * 2 + max(rows.values(), default=1) * (NODE_H + GAP_Y) - GAP_Y
    return edges, width, height


def build_view(record: ExperimentRecord) -> ExecutionView:
    steps: list[StepView] = []
    for es in record.steps:
        step_rec: StepRecord | None = _read_optional(StepRecord, store.join(es.output_path, STEP_RECORD_FILE))
        live: StatusRecord | None = _read_optional(StatusRecord, store.join(es.output_path, STATUS_FILE))
        status = _OUTCOME.get(es.outcome, "waiting")
        note = {"skipped": "skipped: already done", "blocked": "blocked: a dependency failed"}.get(
            es.outcome, es.reason
        )
        if live is not None and live.run_id == record.launch.run_id and es.outcome in ("pending", "running"):
            status = _LIVE[live.status.value]
        same_launch = step_rec is not None and step_rec.launch.run_id == record.launch.run_id
        steps.append(
            StepView(
                identity=es.identity,
                kind=es.kind,
                status=status,
                note=note,
                output_path=es.output_path,
                deps=step_rec.deps if step_rec else [],
                fingerprint=step_rec.fingerprint if step_rec else None,
                config=step_rec.config if step_rec else {},
                started_at=es.started_at or (step_rec.started_at if same_launch and step_rec else None),
                finished_at=es.finished_at or (step_rec.finished_at if same_launch and step_rec else None),
                error=es.error or (step_rec.error if step_rec else None),
                wandb_url=_find_wandb(step_rec.result) if step_rec else None,
                defined_at=step_rec.defined_at if step_rec else None,
            )
        )
    edges, width, height = _layout(steps)
    launch = record.launch
    remote = https_remote(launch.git.remote)
    code_url = (
        f"{remote}/blob/{launch.git.commit}/{launch.experiment}" if remote and launch.git.commit else None
    )
    overall = _LIVE.get(record.status, "running")
    if overall == "running" and steps and all(s.status == "waiting" for s in steps):
        overall = "waiting"
    return ExecutionView(
        run_id=launch.run_id,
        experiment=launch.experiment,
        status=overall,
        prefix=launch.prefix,
        started_at=record.started_at,
        finished_at=record.finished_at,
        git_commit=launch.git.commit,
        git_dirty=launch.git.dirty,
        code_url=code_url,
        pr=launch.pr,
        pr_url=f"{remote}/pull/{launch.pr}" if remote and launch.pr else None,
        user=launch.user,
        ray_job_id=launch.ray_job_id,
        steps=steps,
        edges=edges,
        width=width,
        height=height,
        failures=record.failures,
        warnings=record.warnings,
    )


def read_execution(url: str) -> ExecutionView:
    """One launch record (a ``{prefix}/experiments/{run_id}.json`` URL) as a view; RecordError if unusable."""
    return build_view(parse_record(ExperimentRecord, store.read_bytes(url), url))


def execution_urls(prefix: str) -> list[str]:
    fs, path = url_to_fs(store.join(prefix, EXPERIMENTS_DIR))
    if not fs.exists(path):
        return []
    proto = prefix.split("://", 1)[0] + "://" if "://" in prefix and not prefix.startswith("file://") else ""
    return sorted(proto + p for p in fs.glob(f"{path.rstrip('/')}/*.json"))


def load_executions(prefix: str, warnings: list[str] | None = None) -> list[ExecutionView]:
    """Every launch under ``prefix``, newest first; unreadable records are skipped with a warning each."""
    views = []
    for url in execution_urls(prefix):
        try:
            views.append(read_execution(url))
        except (RecordError, OSError, json.JSONDecodeError) as err:
            msg = f"skipped execution record {url}: {err}"
            log.warning(msg)
            if warnings is not None:
                warnings.append(msg)
    return sorted(views, key=lambda v: v.started_at, reverse=True)


def status_counts(views: Iterable[ExecutionView]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in views:
        out[v.status] = out.get(v.status, 0) + 1
    return out
