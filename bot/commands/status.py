"""`/status`: the approval and the runs of this PR, as the ledger has them."""

from __future__ import annotations

from markupsafe import Markup

from bot.commands.context import Context, Result
from bot.github.escape import code, untrusted

NAME = "status"
USAGE = "/status"
WHO = "anyone"
SUMMARY = "show the approval and the runs of this PR"


def run(args: tuple[str, ...], ctx: Context) -> Result:
    if ctx.pull is None:
        return Result(NAME, False, "runs belong to pull requests; comment on the PR")
    head = ctx.pull.head_sha
    approved = [a for a in ctx.approvals if a["sha"] == head]
    mine = [r for r in ctx.runs]
    lines = [f"approval for {code(head[:7])}: " + (f"by {untrusted(approved[0]['approved_by'], 100)}"
                                                   if approved else "none")]
    lines += [f"- {code(r['run_id'])} {code(r['experiment'])} at {code(r['sha'][:7])} attempt {r['attempt']}: "
              f"{untrusted(r['status'], 20)}"
              for r in mine[-20:]]
    if not mine:
        lines.append("no runs yet")
    return Result(NAME, True, "current state", detail=Markup("\n".join(lines)))
