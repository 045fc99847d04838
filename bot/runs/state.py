"""What the bot has already done for each run, so dispatch and reporting resume without repeating anything.

The ledger's ``runs`` table (bot core) says *what* a run is and its coarse status. This table, in the same
database, records the run's *reporting progress*: submit retries with their next time, the last job state seen,
and the milestones already published (rocket reaction, check started, results comment, Pareto comment, results
committed, check completed). Each milestone is written right after its GitHub call succeeds; the calls are
upserts by key, so the one in flight at a crash is safe to repeat and a finished one is never repeated.
"""

from __future__ import annotations

import json
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Column, Float, Integer, MetaData, String, Table, Text, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

_meta = MetaData()
run_reports = Table(
    "run_reports", _meta,
    Column("run_id", String(64), primary_key=True),
    Column("phase", String(16), nullable=False),  # queued | submitted | finished | done
    Column("submit_tries", Integer, nullable=False, default=0),
    Column("next_try_at", Float, nullable=False, default=0.0),
    Column("job_state", String(16)),
    Column("state", Text, nullable=False),  # RunReport JSON
    Column("updated_at", Float, nullable=False),
)


class RunReport(BaseModel):
    """The reporting state of one run (stored as JSON: new fields can be added without a migration)."""

    model_config = ConfigDict(extra="ignore")

    run_id: str
    phase: str = "queued"
    submit_tries: int = 0
    next_try_at: float = 0.0
    job_state: str | None = None
    done: list[str] = Field(default_factory=list, description="Milestones already published.")
    trigger_comment_id: int | None = None
    planned_flops: float | None = None
    outcome: str | None = None  # succeeded | failed | cancelled
    reason: str | None = None
    last_error: str | None = None
    job_started_at: str | None = None
    job_finished_at: str | None = None
    dashboard_url: str | None = None
    wandb_url: str | None = None
    preregistration: int | None = None
    results_url: str | None = None
    metrics_url: str | None = Field(default=None, description="The run's metrics.jsonl in the store, if any.")
    record_url: str | None = None
    execution_url: str | None = None
    results: dict[str, Any] | None = Field(default=None, description="The attested results, once read.")
    metrics: list[list[float]] = Field(default_factory=list, description="(step, loss) points for the curve.")
    committed_path: str | None = None
    chart_url: str | None = Field(default=None, description="The committed BPB-vs-FLOPs chart, as an image URL.")
    commit_note: str | None = None
    log_tail: str | None = None
    budget_overrun: str | None = Field(default=None, description="What the results used beyond the approval.")

    def has(self, milestone: str) -> bool:
        return milestone in self.done


class RunStates:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        _meta.create_all(engine)

    def create(self, report: RunReport) -> bool:
        """Insert the run's report row; False when it already exists (the dispatch was replayed)."""
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(run_reports).values(**self._row(report)))
        except IntegrityError:
            return False
        return True

    def get(self, run_id: str) -> RunReport | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(run_reports.c.state).where(run_reports.c.run_id == run_id)).first()
        return RunReport.model_validate_json(row[0]) if row else None

    def save(self, report: RunReport) -> None:
        with self.engine.begin() as conn:
            done = conn.execute(
                update(run_reports).where(run_reports.c.run_id == report.run_id).values(**self._row(report))
            ).rowcount
            if not done:
                conn.execute(insert(run_reports).values(**self._row(report)))

    def mark(self, report: RunReport, milestone: str) -> None:
        if milestone not in report.done:
            report.done.append(milestone)
        self.save(report)

    def active(self) -> list[RunReport]:
        """Every run whose reporting is not finished, oldest first: what a restarted bot picks up again."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(run_reports.c.state).where(run_reports.c.phase != "done").order_by(run_reports.c.updated_at)
            ).all()
        return [RunReport.model_validate_json(r[0]) for r in rows]

    @staticmethod
    def _row(report: RunReport) -> dict[str, Any]:
        return {
            "run_id": report.run_id, "phase": report.phase, "submit_tries": report.submit_tries,
            "next_try_at": report.next_try_at, "job_state": report.job_state,
            "state": json.dumps(report.model_dump(mode="json")), "updated_at": time.time(),
        }
