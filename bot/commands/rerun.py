"""`/rerun [experiment]`: run the experiments again at the current head SHA as a new attempt."""

from __future__ import annotations

from markupsafe import Markup

from bot.actions import DispatchRun, RecordApproval, run_id
from bot.commands.context import Context, Result
from bot.commands.run import codes, runnable

NAME = "rerun"
USAGE = "/rerun [experiment]"
WHO = "write access or approvers"
SUMMARY = "start a new attempt of the experiments at the current head commit"


def run(args: tuple[str, ...], ctx: Context) -> Result:
    exps, reason = runnable(ctx, NAME, args)
    if reason or ctx.pull is None:
        return Result(NAME, False, reason or "not a pull request")
    sha = ctx.approved_sha or ctx.pull.head_sha
    actions: list = [RecordApproval(repo=ctx.repo, pr=ctx.pull.number, sha=sha, approved_by=ctx.sender, via="command")]
    for e in exps:
        attempt = 1 + max((r["attempt"] for r in ctx.runs if r["sha"] == sha and r["experiment"] == e.path), default=0)
        actions.append(DispatchRun(
            repo=ctx.repo, run_id=run_id(ctx.repo, ctx.pull.number, sha, e.path, attempt), pr=ctx.pull.number,
            sha=sha, experiment=e.path, attempt=attempt, requested_by=ctx.sender, installation_id=ctx.installation_id,
            comment_id=ctx.comment_id))
    return Result(NAME, True, Markup(f"queued a new attempt at `{sha[:7]}` of {codes([e.path for e in exps])}"),
                  actions=actions)
