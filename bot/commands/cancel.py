"""`/cancel`: cancel this PR's queued and running runs."""

from __future__ import annotations

from bot.actions import CancelRun
from bot.commands.context import Context, Result
from bot.ledger_tables import ACTIVE_RUN_STATES

NAME = "cancel"
USAGE = "/cancel"
WHO = "write access, approvers or the PR author"
SUMMARY = "cancel the queued and running runs of this PR"


def run(args: tuple[str, ...], ctx: Context) -> Result:
    if ctx.pull is None:
        return Result(NAME, False, "runs belong to pull requests; comment on the PR")
    if not ctx.trusted and ctx.sender != ctx.pull.author:
        return Result(NAME, False, ctx.trust_reason)
    active = [r for r in ctx.runs if r["status"] in ACTIVE_RUN_STATES]
    if not active:
        return Result(NAME, True, "nothing to cancel")
    actions = [CancelRun(repo=ctx.repo, run_id=r["run_id"], reason=f"/cancel by {ctx.sender}") for r in active]
    return Result(NAME, True, f"cancelling {len(active)} run(s)", actions=actions)
