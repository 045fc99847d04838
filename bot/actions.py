"""What handlers return: plain data describing effects, applied later by `bot.executor`.

Every action is idempotent by construction: comments and check runs are upserted by key, labels are set or
removed, a run is dispatched under a run id that is a pure function of its inputs, ledger records are keyed.
Actions are serialised into the ledger with their delivery, so a restart resumes exactly where it stopped.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class _A(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    repo: str = Field(description="owner/name")


class UpsertComment(_A):
    type: Literal["upsert_comment"] = "upsert_comment"
    issue_number: int
    kind: str
    key: str
    body: str = Field(description="Rendered Markdown; the executor adds the hidden marker and truncates.")


class AddLabels(_A):
    type: Literal["add_labels"] = "add_labels"
    issue_number: int
    labels: list[str]


class RemoveLabel(_A):
    type: Literal["remove_label"] = "remove_label"
    issue_number: int
    label: str


class UpsertCheckRun(_A):
    type: Literal["upsert_check_run"] = "upsert_check_run"
    head_sha: str
    name: str
    status: Literal["queued", "in_progress", "completed"]
    conclusion: Literal["action_required", "cancelled", "failure", "neutral", "success", "skipped", "timed_out"] | None = None
    title: str
    summary: str
    text: str | None = None
    external_id: str | None = None


class React(_A):
    type: Literal["react"] = "react"
    comment_id: int
    content: Literal["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"]


class CreateStarter(_A):
    """Create `branch` from the default branch with one file, then a draft PR linked to the issue."""

    type: Literal["create_starter"] = "create_starter"
    issue_number: int
    base: str
    branch: str
    path: str
    content: str
    title: str
    body: str


class RecordPreregistration(_A):
    type: Literal["record_preregistration"] = "record_preregistration"
    issue_number: int
    form: str
    status: Literal["preregistered", "needs-info"]
    title: str
    slug: str
    fields: dict[str, Any]
    track: str | None = None
    planned_flops: float | None = None


class RecordApproval(_A):
    type: Literal["record_approval"] = "record_approval"
    pr: int
    sha: str
    approved_by: str
    via: Literal["label", "command"]


class RecordObservedHead(_A):
    """The head read while answering a comment that could not be bound: a later `/run` may approve it."""

    type: Literal["record_observed_head"] = "record_observed_head"
    pr: int
    sha: str
    comment_id: int


class RevokeApprovals(_A):
    """Revoke every approval of `pr` whose SHA differs from `keep_sha` (None: revoke all)."""

    type: Literal["revoke_approvals"] = "revoke_approvals"
    pr: int
    keep_sha: str | None = None
    reason: str


class RecordPlan(_A):
    """What `openlab plan` said of one experiment at one SHA: the dispatcher checks budgets against it."""

    type: Literal["record_plan"] = "record_plan"
    pr: int
    sha: str
    experiment: str
    model_flops: float | None = None
    tokens: int | None = None
    error: str | None = None


class DispatchRun(_A):
    """Start one experiment at exactly `sha`. The ledger records it as queued; a Dispatcher submits it."""

    type: Literal["dispatch_run"] = "dispatch_run"
    run_id: str
    pr: int
    sha: str
    experiment: str
    attempt: int = 1
    requested_by: str
    installation_id: int | None = None
    seeds: list[int] | None = Field(None, description="`/verify`: run the speedrun once per seed (issue 14).")
    comment_id: int | None = Field(None, description="The comment whose command asked for the run (its 🚀).")


class CancelRun(_A):
    type: Literal["cancel_run"] = "cancel_run"
    run_id: str
    reason: str


class SyncRunsComment(_A):
    """Re-render the PR's sticky runs comment from the ledger at the time it is applied (after the writes above it)."""

    type: Literal["sync_runs_comment"] = "sync_runs_comment"
    pr: int
    head_sha: str
    notice: str | None = None
    approval_label: str = "approved-to-run"


Action = Annotated[
    UpsertComment | AddLabels | RemoveLabel | UpsertCheckRun | React | CreateStarter | RecordPreregistration
    | RecordApproval | RecordObservedHead | RevokeApprovals | RecordPlan | DispatchRun | CancelRun | SyncRunsComment,
    Field(discriminator="type"),
]
ACTIONS = TypeAdapter(list[Action])


def run_id(repo: str, pr: int, sha: str, experiment: str, attempt: int) -> str:
    """DESIGN principle 3: the run id (and Ray submission_id) is a pure function of what is run.

    The runner owns the formula (``openlab submit`` uses the same one), so the bot and a manual submission agree.
    """
    from runner.executor.dispatch import run_id as runner_run_id

    return runner_run_id(repo, pr, sha, experiment, attempt)
