"""Typed webhook payloads: only the fields the handlers read, everything else ignored.

GitHub adds fields and actions over time, so models ignore extra keys and an unknown `action` is an
`Ignored` result, not an error. `parse_event` is the single entry used by both front doors (server, Actions).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

HANDLED_EVENTS = ("ping", "installation", "issues", "issue_comment", "pull_request", "check_run", "check_suite")


class _M(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class User(_M):
    login: str
    id: int = 0
    type: str = "User"

    @property
    def is_bot(self) -> bool:
        return self.type == "Bot" or self.login.endswith("[bot]")


class Owner(_M):
    login: str


class Repository(_M):
    id: int = 0
    name: str
    full_name: str
    owner: Owner
    default_branch: str = "main"
    fork: bool = False


class Installation(_M):
    id: int


class Label(_M):
    name: str


class IssuePRLink(_M):
    url: str | None = None


class Issue(_M):
    number: int
    title: str
    body: str | None = None
    user: User
    html_url: str | None = None
    state: str = "open"
    labels: list[Label] = Field(default_factory=list)
    pull_request: IssuePRLink | None = None

    @property
    def label_names(self) -> set[str]:
        return {lab.name for lab in self.labels}


class Comment(_M):
    id: int
    body: str | None = None
    user: User


class GitRef(_M):
    ref: str
    sha: str
    repo: Repository | None = None


class PullRequest(_M):
    number: int
    title: str
    body: str | None = None
    user: User
    state: str = "open"
    draft: bool = False
    head: GitRef
    base: GitRef
    labels: list[Label] = Field(default_factory=list)

    @property
    def from_fork(self) -> bool:
        return self.head.repo is None or self.base.repo is None or self.head.repo.full_name != self.base.repo.full_name


class _Event(_M):
    sender: User
    repository: Repository | None = None
    installation: Installation | None = None


class PingEvent(_M):
    event: Literal["ping"] = "ping"
    zen: str = ""


class InstallationEvent(_Event):
    event: Literal["installation"] = "installation"
    action: str


class IssuesEvent(_Event):
    event: Literal["issues"] = "issues"
    action: Literal["opened", "edited", "reopened", "labeled", "unlabeled", "closed"]
    issue: Issue
    repository: Repository
    label: Label | None = None


class IssueCommentEvent(_Event):
    event: Literal["issue_comment"] = "issue_comment"
    action: Literal["created", "edited", "deleted"]
    issue: Issue
    comment: Comment
    repository: Repository


class PullRequestEvent(_Event):
    event: Literal["pull_request"] = "pull_request"
    action: Literal[
        "opened", "edited", "synchronize", "reopened", "labeled", "unlabeled", "closed",
        "ready_for_review", "converted_to_draft",
    ]
    number: int
    pull_request: PullRequest
    repository: Repository
    label: Label | None = None


class CheckPull(_M):
    """A PR as a check run or suite lists it (GitHub lists only PRs whose head branch is in the repository)."""

    number: int


class CheckRun(_M):
    id: int
    name: str
    head_sha: str
    pull_requests: list[CheckPull] = Field(default_factory=list)


class CheckSuite(_M):
    id: int
    head_sha: str
    pull_requests: list[CheckPull] = Field(default_factory=list)


class CheckRunEvent(_Event):
    """GitHub's "Re-run" button on one of the bot's check runs."""

    event: Literal["check_run"] = "check_run"
    action: Literal["rerequested"]
    check_run: CheckRun
    repository: Repository


class CheckSuiteEvent(_Event):
    """GitHub's "Re-run all checks" on the bot's check suite."""

    event: Literal["check_suite"] = "check_suite"
    action: Literal["rerequested"]
    check_suite: CheckSuite
    repository: Repository


Event = (PingEvent | InstallationEvent | IssuesEvent | IssueCommentEvent | PullRequestEvent | CheckRunEvent
         | CheckSuiteEvent)

_MODELS: dict[str, type[BaseModel]] = {
    "ping": PingEvent,
    "installation": InstallationEvent,
    "issues": IssuesEvent,
    "issue_comment": IssueCommentEvent,
    "pull_request": PullRequestEvent,
    "check_run": CheckRunEvent,
    "check_suite": CheckSuiteEvent,
}


# Actions mode: `pull_request_target` carries the pull_request payload (the workflow runs base-branch code).
ALIASES = {"pull_request_target": "pull_request"}


class Ignored(_M):
    """An event the bot deliberately does nothing with, and why (kept in the ledger for operators)."""

    reason: str


class BadPayload(ValueError):
    """The payload of a handled event does not have the shape GitHub documents."""


def handles(name: str, action: object) -> bool:
    """Whether (event, action) is one the bot acts on; a cheap check for the ingress path."""
    model = _MODELS.get(ALIASES.get(name, name))
    if model is None:
        return False
    field = model.model_fields.get("action")
    choices = getattr(field.annotation, "__args__", None) if field is not None else None
    if not choices or not isinstance(choices[0], str):
        return True
    return action in choices


def parse_event(name: str, payload: object) -> Event | Ignored:
    name = ALIASES.get(name, name)
    model = _MODELS.get(name)
    if model is None:
        return Ignored(reason=f"event {name!r} is not handled")
    if not isinstance(payload, dict):
        raise BadPayload(f"{name}: payload is not a JSON object")
    action = payload.get("action")
    allowed = model.model_fields.get("action")
    if allowed is not None and action is not None:
        choices = getattr(allowed.annotation, "__args__", None)
        if choices and isinstance(choices[0], str) and action not in choices:
            return Ignored(reason=f"{name}.{action} is not handled")
    try:
        return model.model_validate(payload)  # type: ignore[return-value]
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise BadPayload(f"{name}: {loc}: {first['msg']}") from None
