"""`/run [experiment]`: approve the PR's current head SHA and start its experiments (or the one named)."""

from __future__ import annotations

from markupsafe import Markup

from bot.actions import DispatchRun, RecordApproval, run_id
from bot.commands.context import Context, Result
from bot.forms.linking import ExperimentFile
from bot.github.escape import code
from bot.ledger_tables import ACTIVE_RUN_STATES

NAME = "run"
USAGE = "/run [experiment]"
WHO = "write access or approvers"
SUMMARY = "approve the current head commit and run its experiments (or only the one named)"


def codes(paths: list[str]) -> Markup:
    return Markup(", ").join(code(p) for p in paths)


def runnable(ctx: Context, name: str, args: tuple[str, ...]) -> tuple[list[ExperimentFile], str | None]:
    """The experiments a run-starting command may start, or the reason it may not (shared with /rerun).

    Reasons are Markdown the bot wrote (``Markup``) with every PR-supplied part escaped by `bot.github.escape`."""
    pull = ctx.pull
    if pull is None:
        return [], "runs start from pull requests; comment on the PR"
    if not ctx.trusted:
        return [], ctx.trust_reason
    if pull.state != "open":
        return [], "the pull request is closed"
    if pull.draft:
        return [], "the pull request is a draft: mark it ready for review, wait for its plan, then `/run` again"
    if ctx.bind_problem:
        return [], ctx.bind_problem
    exps = list(pull.experiments)
    if args:
        want = args[0].strip()
        exps = [e for e in exps if want in (e.path, e.path.rsplit("/", 1)[-1], e.path.rsplit("/", 1)[-1][:-3])]
        if not exps:
            names = codes([e.path for e in pull.experiments]) or "none"
            return [], Markup(f"no experiment named {code(want)} in this PR (experiments: {names})")
    if not exps:
        return [], Markup(f"this PR changes no experiment under {code(ctx.config.experiments_dir + '/')}")
    for e in exps:
        if e.problems:
            return [], Markup(f"{code(e.path)}: {e.problems[0]}")  # the bot's own naming rule
        if e.issue is None or ctx.prereg_status.get(e.issue) != "preregistered":
            return [], Markup(f"{code(e.path)}: issue #{e.issue} is not preregistered "
                              f"(label {code(ctx.config.preregistered_label)})")
    active = [r for r in ctx.runs if r["status"] in ACTIVE_RUN_STATES]
    if len(active) + len(exps) > ctx.config.budgets.max_queued_runs_per_pr:
        return [], f"this PR already has {len(active)} active runs (limit {ctx.config.budgets.max_queued_runs_per_pr})"
    return exps, None


def run(args: tuple[str, ...], ctx: Context) -> Result:
    exps, reason = runnable(ctx, NAME, args)
    if reason or ctx.pull is None:
        return Result(NAME, False, reason or "not a pull request")
    sha = ctx.approved_sha or ctx.pull.head_sha
    actions: list = [RecordApproval(repo=ctx.repo, pr=ctx.pull.number, sha=sha, approved_by=ctx.sender, via="command")]
    started, already = [], []
    for e in exps:
        rid = run_id(ctx.repo, ctx.pull.number, sha, e.path, 1)
        if any(r["run_id"] == rid for r in ctx.runs):
            already.append(e.path)
            continue
        actions.append(DispatchRun(repo=ctx.repo, run_id=rid, pr=ctx.pull.number, sha=sha, experiment=e.path,
                                   attempt=1, requested_by=ctx.sender, installation_id=ctx.installation_id,
                                   comment_id=ctx.comment_id))
        started.append(e.path)
    msg = Markup(f"approved {code(sha[:7])}; queued ") + (codes(started) or "nothing new")
    if already:
        msg += Markup(f"; already run at this commit: {codes(already)} (use /rerun)")
    return Result(NAME, True, msg, actions=actions)
