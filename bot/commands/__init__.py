"""Slash commands, prow-style: one command per module, registered in :data:`REGISTRY`.

A module defines ``NAME``, ``USAGE``, ``WHO``, ``SUMMARY`` and ``run(args, ctx) -> Result``. `/help` is
generated from the registry, so a new command documents itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from bot.actions import Action
from bot.linking import ExperimentFile
from bot.repo_config import RepoConfig

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
    # The head a comment approves (bot.approval.bind_head) or why none; None/None on paths with a SHA in the event.
    approved_sha: str | None = None
    bind_problem: str | None = None


@dataclass
class Result:
    command: str
    ok: bool
    message: str
    detail: str | None = None
    actions: list[Action] = field(default_factory=list)


def _registry() -> dict[str, ModuleType]:
    from bot.commands import cancel, help, rerun, run, status, verify

    return {m.NAME: m for m in (run, cancel, status, rerun, verify, help)}


REGISTRY = _registry()
