"""`issue_comment` events: slash commands. 👀 on receipt, then 👍 or 😕; a reply only for a failed command
(or one that answers with text, /help and /status); the rest shows in the PR's sticky comment (bot/sticky.py)."""

from __future__ import annotations

from dataclasses import dataclass

from bot.actions import Action, React, RecordObservedHead, SyncRunsComment, UpsertComment
from bot.commands.context import REGISTRY, Context, PullInfo, Result
from bot.commands.parse import find_commands
from bot.config.trust import gather_trust
from bot.github.events import IssueCommentEvent
from bot.github.render import render_comment
from bot.handlers.env import Env, load_repo_config
from bot.handlers.pulls import prereg_statuses, pull_info
from bot.ledger import LedgerView
from bot.runs.approval import Binding, bind_head


@dataclass(frozen=True)
class CommentFacts:
    ctx: Context
    invocations: list
    skipped: int
    config_error: str | None
    binding: Binding | None = None


def _ignored(event: IssueCommentEvent, bot_login: str) -> bool:
    sender = event.sender
    return (event.action != "created" or sender.is_bot or sender.login.lower() == bot_login.lower()
            or event.comment.user.is_bot)


def gather(event: IssueCommentEvent, env: Env) -> CommentFacts | None:
    if _ignored(event, env.bot_login):
        return None
    invocations, skipped = find_commands(event.comment.body, set(REGISTRY))
    if not invocations:
        return None
    repo = event.repository.full_name
    config, error = load_repo_config(env, repo)
    trusted, reason = gather_trust(env.gh, repo, event.sender.login, config)
    pull: PullInfo | None = None
    prereg: dict[int, str] = {}
    binding: Binding | None = None
    if event.issue.pull_request is not None:
        pull = pull_info(env, repo, env.gh.get_pull(repo, event.issue.number), config)
        prereg = prereg_statuses(env, repo, [e.issue for e in pull.experiments], config)
        # Read after the PR: a push landing in between then shows up in the timeline or as a moved API head.
        timeline = env.view.head_timeline(repo, pull.number, event.comment.id)
        binding = bind_head(timeline, pull.head_sha, env.view.planned_at(repo, pull.head_sha))
    ctx = Context(
        repo=repo, issue_number=event.issue.number, sender=event.sender.login, trusted=trusted, trust_reason=reason,
        config=config, pull=pull, prereg_status=prereg, approvals=env.view.approvals(repo, event.issue.number),
        runs=env.view.runs(repo, event.issue.number),
        installation_id=event.installation.id if event.installation else None,
        approved_sha=binding.sha if binding else None, bind_problem=binding.problem if binding else None,
        comment_id=event.comment.id,
    )
    return CommentFacts(ctx=ctx, invocations=invocations, skipped=skipped, config_error=error, binding=binding)


def decide(event: IssueCommentEvent, facts: CommentFacts, view: LedgerView) -> list[Action]:
    ctx = facts.ctx
    actions: list[Action] = [React(repo=ctx.repo, comment_id=event.comment.id, content="eyes")]
    results: list[Result] = []
    for inv in facts.invocations:
        result = REGISTRY[inv.name].run(inv.args, ctx)
        results.append(result)
        actions.extend(result.actions)
    binding = facts.binding
    if binding is not None and binding.observed and ctx.pull is not None and any(
            inv.name in ("run", "rerun") for inv in facts.invocations):
        actions.append(RecordObservedHead(repo=ctx.repo, pr=ctx.pull.number, sha=binding.observed,
                                          comment_id=event.comment.id))
    if facts.skipped:
        results.append(Result("…", False, f"{facts.skipped} more command(s) skipped: at most 10 per comment"))
    if facts.config_error:
        results.append(Result("config", False, f"{facts.config_error} (defaults used)"))
    # The sticky PR comment shows what a command changed; a reply is posted only for a command that failed or
    # that answers with text of its own (/help, /status), so a successful `/run` adds no comment.
    shown = [{"command": r.command, "ok": r.ok, "message": r.message, "detail": r.detail}
             for r in results if not r.ok or r.detail]
    if shown:
        actions.append(UpsertComment(repo=ctx.repo, issue_number=ctx.issue_number, kind="reply",
                                     key=str(event.comment.id),
                                     body=render_comment("reply", str(event.comment.id), results=shown)))
    if ctx.pull is not None and any(a.type in ("dispatch_run", "cancel_run", "record_approval") for a in actions):
        actions.append(SyncRunsComment(repo=ctx.repo, pr=ctx.pull.number, head_sha=ctx.pull.head_sha,
                                       approval_label=ctx.config.approval_label))
    failed = any(not r.ok for r in results)
    actions.append(React(repo=ctx.repo, comment_id=event.comment.id, content="confused" if failed else "+1"))
    return actions
