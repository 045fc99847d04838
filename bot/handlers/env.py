"""What event handlers may read (:class:`Env`) and the repo's ``openlab.yml`` as they load it.

Apart from the package's ``__init__`` (whose :func:`bot.handlers.handle` routes to the handler modules) so the
handler modules import it without a circle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.config.repo_config import CONFIG_PATH, RepoConfig, parse_repo_config
from bot.github.client import GitHubClient
from bot.ledger import LedgerView
from runner.errors import ConfigError


@dataclass(frozen=True)
class Env:
    """What handlers may read: GitHub (reads), the ledger (reads), the plan runner, the bot's own login."""

    gh: GitHubClient
    view: LedgerView
    bot_login: str
    planner: Callable[..., Any]


def load_repo_config(env: Env, repo: str) -> tuple[RepoConfig, str | None]:
    """The repo's openlab.yml from its default branch; defaults plus the error text if it is malformed."""
    try:
        return parse_repo_config(env.gh.get_contents(repo, CONFIG_PATH)), None
    except ConfigError as err:
        return RepoConfig(), str(err)
