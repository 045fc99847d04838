"""What a slash command is given and gives back (:class:`Context`, :class:`Result`), and :data:`REGISTRY`, the
commands by name.

Apart from the package's ``__init__`` (which fills the registry with the command modules) so that the command
modules, `/help` (which lists the registry) and the comment parser import it without a circle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from bot.actions import Action
from bot.config.repo_config import RepoConfig
from bot.forms.linking import ExperimentFile

MAX_COMMANDS = 10


@dataclass(frozen=True)
class PullInfo:
    number: int
    head_sha: str
    author: str
    state: str
    draft: bool
    from_fork: bool
    experiments: tuple[ExperimentFile, ...]


@dataclass(frozen=True)
class Context:
    repo: str
    issue_number: int
    sender: str
    trusted: bool
    trust_reason: str
    config: RepoConfig
    pull: PullInfo | None
    prereg_status: dict[int, str]
    approvals: list[dict[str, Any]]
    runs: list[dict[str, Any]]
    installation_id: int | None
    # The head a comment approves (bot.runs.approval.bind_head) or why none; None/None on paths with a SHA in the event.
    approved_sha: str | None = None
    bind_problem: str | None = None
    comment_id: int | None = None  # the comment the commands came in (None: the approval label)


@dataclass
class Result:
    command: str
    ok: bool
    message: str
    detail: str | None = None
    actions: list[Action] = field(default_factory=list)


# name -> command module; filled by bot/commands/__init__.py, read by `/help` and the comment handler
REGISTRY: dict[str, ModuleType] = {}
