"""`/verify [speedrun]`: reproduce a speedrun submission at the approved head SHA with N seeds (issue 14).

One experiment, one plan, one budget check: the run is the PR's speedrun file with ``OPENLAB_SPEEDRUN_SEEDS`` set
(``runner.reproduction``); the dispatcher checks N x the single run's planned FLOPs against the budgets, and the
reconciler posts the seeds' mean, std and 95% interval and the record decision (``bot.runs.reproductions``).
"""

from __future__ import annotations

from bot.actions import DispatchRun, RecordApproval
from bot.commands.context import Context, Result
from bot.commands.run import runnable
from bot.ledger_tables import ACTIVE_RUN_STATES
from runner.executor.dispatch import run_id as runner_run_id
from runner.reproduction import seeds_for

NAME = "verify"
USAGE = "/verify [speedrun]"
WHO = "write access or approvers"
SUMMARY = "reproduce the speedrun at the current head commit with N seeds (record candidate)"
MAX_VERIFY_ATTEMPTS = 50


def verify_run_id(repo: str, pr: int, sha: str, experiment: str, attempt: int) -> str:
    """A reproduction's run id: the run-id formula over the experiment marked ``#verify`` (never a /run's id)."""
    return runner_run_id(repo, pr, sha, f"{experiment}#verify", attempt)


def run(args: tuple[str, ...], ctx: Context) -> Result:
    if ctx.pull is None:
        return Result(NAME, False, "`/verify` reproduces a speedrun pull request; comment on the PR")
    if not ctx.trusted:
        return Result(NAME, False, ctx.trust_reason)
    speedrun_dir = f"{ctx.config.experiments_dir.rstrip('/')}/speedrun/"
    if not any(e.path.startswith(speedrun_dir) for e in ctx.pull.experiments):
        return Result(NAME, False, f"`/verify` reproduces speedruns; this PR changes no speedrun under "
                                   f"`{speedrun_dir}`")
    active = [r for r in ctx.runs if r["status"] in ACTIVE_RUN_STATES]
    if active:
        return Result(NAME, False, f"run `{active[0]['run_id']}` is still {active[0]['status']} on this PR; "
                                   "wait for it to finish (or `/cancel` it) before `/verify`")
    exps, reason = runnable(ctx, NAME, args)
    if reason:
        return Result(NAME, False, reason)
    speedruns = [e for e in exps if e.path.startswith(speedrun_dir)]
    if len(speedruns) != 1:
        names = ", ".join(f"`{e.path.rsplit('/', 1)[-1][:-3]}`" for e in speedruns) or "none"
        return Result(NAME, False, f"name the speedrun to verify: `/verify NAME` (speedruns: {names})")
    exp, sha = speedruns[0], ctx.pull.head_sha
    taken = {r["run_id"] for r in ctx.runs}
    attempt = next((a for a in range(1, MAX_VERIFY_ATTEMPTS + 1)
                    if verify_run_id(ctx.repo, ctx.pull.number, sha, exp.path, a) not in taken), None)
    if attempt is None:
        return Result(NAME, False, f"`{exp.path}` was verified {MAX_VERIFY_ATTEMPTS} times at `{sha[:7]}` already")
    seeds = seeds_for(ctx.config.speedrun.verify_seeds)
    rid = verify_run_id(ctx.repo, ctx.pull.number, sha, exp.path, attempt)
    return Result(NAME, True, (
        f"approved `{sha[:7]}`; queued a {len(seeds)}-seed reproduction of `{exp.path}` (seeds "
        f"{', '.join(map(str, seeds))}; budget check: {len(seeds)} x the planned FLOPs)"),
        actions=[
            RecordApproval(repo=ctx.repo, pr=ctx.pull.number, sha=sha, approved_by=ctx.sender, via="command"),
            DispatchRun(repo=ctx.repo, run_id=rid, pr=ctx.pull.number, sha=sha, experiment=exp.path,
                        attempt=attempt, requested_by=ctx.sender, installation_id=ctx.installation_id,
                        seeds=seeds, comment_id=ctx.comment_id),
        ])
