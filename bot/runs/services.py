"""What the run lifecycle shares: :class:`RunServices`, built once per process (server, Actions job, CLI), and the
address of a run's execution page.

Its own module so the dispatcher (:mod:`bot.runs.dispatch`), the publishing of a run on its PR (:mod:`bot.runs.publish`)
and the reconciler (:mod:`bot.runs.reconcile`) all read it without importing each other.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.actions import UpsertComment
from bot.config.repo_config import CONFIG_PATH, RepoConfig, parse_repo_config
from bot.github.client import GitHubClient
from bot.ledger import Ledger
from bot.runs.jobs import JobBackend
from bot.runs.publisher import Publisher
from bot.runs.state import RunStates
from runner.errors import OpenlabError


@dataclass
class RunServices:
    """What dispatching and reconciling need; built once per process (server, Actions job, CLI)."""

    gh_for: Callable[[int | None], GitHubClient]  # installation id -> client (one client in Actions mode)
    ledger: Ledger
    backend: JobBackend
    bot_login: str
    states: RunStates = field(init=False)
    storage_prefix: str | None = None  # overrides the repo config's storage_prefix (operator setting)
    source: str | None = None  # where the executor fetches the SHA from; None: the base repo's clone URL
    wandb_entity: str | None = None
    signing_key: bytes | None = None
    leaderboard_results: str = "experiments/**/results.json"
    clock: Any = time.time

    def __post_init__(self) -> None:
        self.states = RunStates(self.ledger.engine)

    def gh(self, run: dict[str, Any]) -> GitHubClient:
        return self.gh_for(run.get("installation_id"))

    def publisher(self, run: dict[str, Any]) -> Publisher:
        return Publisher(self.gh(run), self.ledger, self.bot_login)

    @classmethod
    def from_env(cls, gh_for: Callable[[int | None], GitHubClient], ledger: Ledger, backend: JobBackend,
                 bot_login: str) -> RunServices:
        key = os.environ.get("OPENLAB_SIGNING_KEY") or None
        key_file = os.environ.get("OPENLAB_SIGNING_KEY_FILE")
        if key is None and key_file:
            key = Path(key_file).read_text()
        return cls(
            gh_for=gh_for, ledger=ledger, backend=backend, bot_login=bot_login,
            storage_prefix=os.environ.get("OPENLAB_STORAGE_PREFIX") or None,
            source=os.environ.get("OPENLAB_SOURCE") or None,
            wandb_entity=os.environ.get("WANDB_ENTITY") or None,
            signing_key=key.encode() if key else None,
            leaderboard_results=os.environ.get("OPENLAB_LEADERBOARD_RESULTS", "experiments/**/results.json"),
        )

    def repo_config(self, run: dict[str, Any]) -> RepoConfig:
        try:
            return parse_repo_config(self.gh(run).get_contents(run["repo"], CONFIG_PATH))
        except OpenlabError:
            return RepoConfig()  # the bad file is reported on its own thread by the bot core

    def prefix(self, config: RepoConfig) -> str:
        prefix = self.storage_prefix or config.storage_prefix
        if "://" not in prefix or prefix.startswith("file://"):
            # Ray jobs run in their own working dir: a relative local prefix must be made absolute here.
            prefix = str(Path(prefix.removeprefix("file://")).resolve())
        return prefix

    def upsert_comment(self, run: dict[str, Any], body: str) -> None:
        from bot.executor import Executor  # the bot core's one comment-upsert implementation

        Executor(self.gh(run), self.ledger, self.bot_login).apply(
            UpsertComment(repo=run["repo"], issue_number=run["pr"], kind="run", key=run["run_id"], body=body))


def execution_page_url(site_url: str | None, run_id: str) -> str | None:
    """Where the site publishes this run's execution page (`openlab reports build --prefix`)."""
    from leaderboard.execution_pages import page_name

    return f"{site_url.rstrip('/')}/executions/{page_name(run_id)}" if site_url else None
