"""`pull_request` events: link experiments to preregistrations, post the plan, gate approvals on the head SHA."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from markupsafe import Markup

from bot.actions import (
    Action,
    CancelRun,
    DispatchRun,
    RecordApproval,
    RemoveLabel,
    RevokeApprovals,
    SyncRunsComment,
    UpsertCheckRun,
    UpsertComment,
    run_id,
)
from bot.commands.context import Context, PullInfo
from bot.commands.run import runnable
from bot.config.repo_config import RepoConfig
from bot.config.trust import gather_trust
from bot.forms.linking import link
from bot.github.events import PullRequestEvent
from bot.github.render import marker, render
from bot.handlers.env import Env, load_repo_config
from bot.ledger import LedgerView
from bot.ledger_tables import ACTIVE_RUN_STATES
from bot.plans.report import plan_actions
from bot.plans.sandbox import PlanOutcome

PLAN_ACTIONS = ("opened", "reopened", "synchronize", "ready_for_review", "edited")


@dataclass(frozen=True)
class PullFacts:
    config: RepoConfig
    config_error: str | None
    pull: PullInfo
    prereg: dict[int, str]
    prereg_flops: dict[int, float | None]
    plans: dict[str, PlanOutcome] | None
    sender_trusted: bool
    sender_reason: str


def pull_info(env: Env, repo: str, pr: dict[str, Any], config: RepoConfig) -> PullInfo:
    files = env.gh.pull_files(repo, pr["number"])
    head_repo = (pr["head"].get("repo") or {}).get("full_name")
    return PullInfo(
        number=pr["number"], head_sha=pr["head"]["sha"], author=pr["user"]["login"], state=pr["state"],
        draft=bool(pr.get("draft")), from_fork=head_repo != pr["base"]["repo"]["full_name"],
        experiments=tuple(link(files, pr.get("body"), config.experiments_dir)),
    )


def prereg_statuses(env: Env, repo: str, issues: list[int | None], config: RepoConfig) -> dict[int, str]:
    """Ledger first; an issue the bot never saw is judged by its label on GitHub."""
    out: dict[int, str] = {}
    for n in {i for i in issues if i is not None}:
        rec = env.view.preregistration(repo, n)
        if rec is not None:
            out[n] = rec["status"]
            continue
        issue = env.gh.get_issue(repo, n)
        labels = {lab["name"] for lab in (issue or {}).get("labels", [])}
        out[n] = "preregistered" if config.preregistered_label in labels else ("needs-info" if issue else "missing")
    return out


def plan_facts(env: Env, repo: str, pr: dict[str, Any], plan: bool) -> PullFacts:
    """What planning a PR needs; the plan itself only when asked for and the PR is open and not a draft (a draft is
    planned once it is marked ready for review). Shared with the check re-run handler (checks.py)."""
    config, error = load_repo_config(env, repo)
    pull = pull_info(env, repo, pr, config)
    prereg = prereg_statuses(env, repo, [e.issue for e in pull.experiments], config)
    flops = {n: (env.view.preregistration(repo, n) or {}).get("planned_flops") for n in prereg}
    plans = None
    if plan and env.planner is not None and pull.state == "open" and not pull.draft:
        paths = [e.path for e in pull.experiments if not e.problems]
        plans = env.planner(repo, pull.head_sha, paths) if paths else {}
    return PullFacts(config, error, pull, prereg, flops, plans, False, "")


def gather(event: PullRequestEvent, env: Env) -> PullFacts:
    repo = event.repository.full_name
    facts = plan_facts(env, repo, event.pull_request.model_dump(), plan=event.action in PLAN_ACTIONS)
    if event.action in ("labeled", "unlabeled") and not event.sender.is_bot:
        trusted, reason = gather_trust(env.gh, repo, event.sender.login, facts.config)
        facts = replace(facts, sender_trusted=trusted, sender_reason=reason)
    return facts


def draft_note(repo: str, pr: int) -> UpsertComment:
    """The sticky plan comment of a draft PR: a short note, replaced by the plan once the PR is ready."""
    return UpsertComment(repo=repo, issue_number=pr, kind="plan", key=str(pr),
                         body=render("plan_draft.md.j2", marker=Markup(marker("plan", str(pr)))))


def decide(event: PullRequestEvent, facts: PullFacts, view: LedgerView) -> list[Action]:
    repo, pr, cfg = event.repository.full_name, facts.pull, facts.config
    actions: list[Action] = []
    if facts.plans is not None:
        actions += plan_actions(repo, pr.number, pr.head_sha, pr.experiments, facts.plans, facts.prereg,
                                facts.prereg_flops, cfg)
    elif pr.draft and event.action in ("opened", "reopened") and pr.state == "open":
        actions.append(draft_note(repo, pr.number))  # a push to a draft says nothing more
    if event.action == "synchronize":
        actions += _revoke_on_push(event, facts, view)
    elif event.action == "closed":
        actions += [CancelRun(repo=repo, run_id=r["run_id"], reason="pull request closed")
                    for r in view.runs(repo, pr.number) if r["status"] in ACTIVE_RUN_STATES]
        actions.append(RevokeApprovals(repo=repo, pr=pr.number, reason="pull request closed"))
    elif event.label is not None and event.label.name == cfg.approval_label and not event.sender.is_bot:
        actions += _label_changed(event, facts, view)
    return actions


def _revoke_on_push(event: PullRequestEvent, facts: PullFacts, view: LedgerView) -> list[Action]:
    repo, pr, cfg = event.repository.full_name, facts.pull, facts.config
    stale = [a for a in view.approvals(repo, pr.number) if a["sha"] != pr.head_sha]
    labelled = cfg.approval_label in {lab.name for lab in event.pull_request.labels}
    # Queued and running runs of older commits are stopped (prow's abortAllJobs): their code is superseded. A push
    # by the bot itself (a results commit) stops nothing: it only adds results.json beside sibling runs.
    stoppable = ("queued",) if event.sender.is_bot else ACTIVE_RUN_STATES
    active = [r for r in view.runs(repo, pr.number) if r["status"] in stoppable and r["sha"] != pr.head_sha]
    if not (stale or labelled or active):
        return []
    old = ", ".join(sorted({f"`{a['sha'][:7]}`" for a in stale})) or "the previous commit"
    actions: list[Action] = [RevokeApprovals(repo=repo, pr=pr.number, keep_sha=pr.head_sha,
                                             reason=f"new push {pr.head_sha[:7]}")]
    if labelled:
        actions.append(RemoveLabel(repo=repo, issue_number=pr.number, label=cfg.approval_label))
    actions += [CancelRun(repo=repo, run_id=r["run_id"], reason=f"superseded by push {pr.head_sha[:7]}")
                for r in active]
    notice = (f"New push `{pr.head_sha[:7]}`: the approval for {old} is revoked"
              + (f" and the `{cfg.approval_label}` label removed" if labelled else "")
              + (f"; {len(active)} queued or running run(s) cancelled" if active else "")
              + ". A trusted user must approve the new commit.")
    actions.append(SyncRunsComment(repo=repo, pr=pr.number, head_sha=pr.head_sha, approval_label=cfg.approval_label, notice=notice))
    return actions


def _label_changed(event: PullRequestEvent, facts: PullFacts, view: LedgerView) -> list[Action]:
    repo, pr, cfg = event.repository.full_name, facts.pull, facts.config
    who = event.sender.login
    if event.action == "unlabeled":
        return [RevokeApprovals(repo=repo, pr=pr.number, reason=f"label removed by {who}"),
                SyncRunsComment(repo=repo, pr=pr.number, head_sha=pr.head_sha, approval_label=cfg.approval_label,
                                notice=f"`{cfg.approval_label}` removed by {who}: approval revoked.")]
    if not facts.sender_trusted:
        return [RemoveLabel(repo=repo, issue_number=pr.number, label=cfg.approval_label),
                SyncRunsComment(repo=repo, pr=pr.number, head_sha=pr.head_sha, approval_label=cfg.approval_label,
                                notice=f"`{cfg.approval_label}` removed: {facts.sender_reason}.")]
    ctx = Context(repo=repo, issue_number=pr.number, sender=who, trusted=True, trust_reason=facts.sender_reason,
                  config=cfg, pull=pr, prereg_status=facts.prereg, approvals=view.approvals(repo, pr.number),
                  runs=view.runs(repo, pr.number),
                  installation_id=event.installation.id if event.installation else None)
    exps, reason = runnable(ctx, "run", ())
    actions: list[Action] = [RecordApproval(repo=repo, pr=pr.number, sha=pr.head_sha, approved_by=who, via="label")]
    for e in exps:
        rid = run_id(repo, pr.number, pr.head_sha, e.path, 1)
        if not any(r["run_id"] == rid for r in ctx.runs):
            actions.append(DispatchRun(repo=repo, run_id=rid, pr=pr.number, sha=pr.head_sha, experiment=e.path,
                                       requested_by=who, installation_id=ctx.installation_id))
    notice = f"Approved `{pr.head_sha[:7]}` by label from {who}." + (f" Not started: {reason}." if reason else "")
    actions.append(SyncRunsComment(repo=repo, pr=pr.number, head_sha=pr.head_sha, approval_label=cfg.approval_label, notice=notice))
    return actions


__all__ = ["decide", "gather", "pull_info", "prereg_statuses", "UpsertCheckRun", "UpsertComment"]
