"""Event handlers, probot-style: one module per event, each a pair of functions.

- ``gather(event, env) -> Facts`` reads what the decision needs (repo config, a PR, a permission, a plan). It
  may call GitHub (reads only) or run the plan sandbox, and never writes.
- ``decide(event, facts, view) -> list[Action]`` is pure: event + repo config + ledger state in, actions out.

The worker and the Actions entry call :func:`handle`, which routes by event name.
"""

from __future__ import annotations

from bot.actions import Action
from bot.github.events import (
    CheckRunEvent,
    CheckSuiteEvent,
    Event,
    Ignored,
    InstallationEvent,
    IssueCommentEvent,
    IssuesEvent,
    PullRequestEvent,
)
from bot.handlers.env import Env, load_repo_config


def handle(event: Event | Ignored, env: Env) -> list[Action]:
    from bot.handlers import comments, issues, pulls

    if isinstance(event, IssuesEvent):
        return issues.decide(event, issues.gather(event, env), env.view)
    if isinstance(event, PullRequestEvent):
        return pulls.decide(event, pulls.gather(event, env), env.view)
    if isinstance(event, CheckRunEvent | CheckSuiteEvent):
        from bot.handlers import checks

        return checks.decide(event, checks.gather(event, env), env.view)
    if isinstance(event, IssueCommentEvent):
        facts = comments.gather(event, env)
        return [] if facts is None else comments.decide(event, facts, env.view)
    if isinstance(event, InstallationEvent) and event.action == "deleted" and event.installation is not None:
        # The App is gone from those repositories: stop everything it started there (github-bots.md §9.19).
        from bot.actions import CancelRun

        return [CancelRun(repo=r["repo"], run_id=r["run_id"], reason="the openlab app was uninstalled")
                for r in env.view.active_runs_for_installation(event.installation.id)]
    return []


__all__ = ["Env", "handle", "load_repo_config"]
