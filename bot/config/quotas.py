"""Run quotas: how much of the lab's compute one PR, one user and one repository may hold at a time.

Prow's users learned this the hard way (crypto-mining through presubmits, kubernetes/test-infra#22077): a
trusted ``/run`` is still bounded. ``.github/openlab.yml`` may set a ``quotas:`` mapping with these fields; a
missing key means the default below. Runs count as *active* while queued or running. The monthly FLOPs quota
counts the planned FLOPs of every run dispatched in the current calendar month (UTC) that did not get cancelled
before it started, so an expensive run cannot be started just before another one finishes.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bot.ledger_tables import ACTIVE_RUN_STATES


class Quotas(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_active_runs_per_pr: int = Field(3, ge=1, description="Queued or running runs of one PR.")
    max_active_runs_per_user: int = Field(4, ge=1, description="Queued or running runs requested by one user.")
    max_active_runs_per_repo: int = Field(8, ge=1, description="Queued or running runs of the whole repository.")
    max_flops_per_month: float = Field(1e22, gt=0, description="Planned model FLOPs dispatched per UTC month.")


def quotas_of(repo_config: Any) -> Quotas:
    """The repo config's quotas (the config embeds a ``quotas`` field; older configs have none: defaults)."""
    q = getattr(repo_config, "quotas", None)
    return q if isinstance(q, Quotas) else Quotas.model_validate(q or {})


def month_start(now: datetime | None = None) -> float:
    now = now or datetime.now(UTC)
    return datetime(now.year, now.month, 1, tzinfo=UTC).timestamp()


def quota_problem(
    quotas: Quotas,
    *,
    run_id: str,
    pr: int,
    user: str,
    planned_flops: float | None,
    runs: Iterable[dict[str, Any]],
    flops_of: dict[str, float],
    now: datetime | None = None,
) -> str | None:
    """Why this run may not start now, or None. ``runs`` are the repo's ledger runs, ``flops_of`` run id -> FLOPs."""
    others = [r for r in runs if r["run_id"] != run_id]
    active = [r for r in others if r["status"] in ACTIVE_RUN_STATES]
    if sum(r["pr"] == pr for r in active) >= quotas.max_active_runs_per_pr:
        return f"this PR already has {quotas.max_active_runs_per_pr} active runs (quota max_active_runs_per_pr)"
    if sum(r["requested_by"] == user for r in active) >= quotas.max_active_runs_per_user:
        return f"{user} already has {quotas.max_active_runs_per_user} active runs (quota max_active_runs_per_user)"
    if len(active) >= quotas.max_active_runs_per_repo:
        return f"the repository already has {quotas.max_active_runs_per_repo} active runs (quota max_active_runs_per_repo)"
    since = month_start(now)
    spent = sum(flops_of.get(r["run_id"], 0.0) for r in others if r["created_at"] >= since and r["status"] != "refused")
    if planned_flops and spent + planned_flops > quotas.max_flops_per_month:
        return (
            f"this run plans {planned_flops:.3g} FLOPs and {spent:.3g} were already dispatched this month; "
            f"the monthly quota is {quotas.max_flops_per_month:.3g} (quota max_flops_per_month)"
        )
    return None
