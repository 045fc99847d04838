"""Turn plan outcomes into the `openlab/plan` check run on the head SHA and the PR's sticky plan comment.

Used by the pull_request handler (App mode: the bot plans in its sandbox) and by `openlab event plan_report DIR`
(Actions mode: an unprivileged workflow planned the PR and left the JSON as an artifact, read here as data).
"""

from __future__ import annotations

from markupsafe import Markup

from bot.actions import Action, RecordPlan, UpsertCheckRun, UpsertComment
from bot.linking import ExperimentFile
from bot.plan_sandbox import PlanOutcome
from bot.render import fmt_flops, render_comment
from bot.repo_config import RepoConfig

CHECK_NAME = "openlab/plan"


def _experiment_view(e: ExperimentFile, outcome: PlanOutcome | None, budget: float) -> tuple[dict, list[str]]:
    problems: list[str] = [f"`{e.path}`: {p}" for p in e.problems]
    view: dict = {"path": e.path, "issue": e.issue, "error": None, "steps": [], "warnings": []}
    if outcome is None:
        view["error"] = "not planned" if not e.problems else "fix the file name first"
        return view, problems
    if outcome.error or outcome.plan is None:
        view["error"] = outcome.error
        problems.append(f"`{e.path}`: plan failed: {outcome.error}")
        return view, problems
    plan = outcome.plan
    within = plan.total_model_flops <= budget
    view.update(
        steps=[{"identity": s.identity, "kind": s.kind, "action": s.action, "flops": fmt_flops(s.model_flops),
                "tokens": s.tokens if s.tokens is not None else "n/a"} for s in plan.steps],
        total_flops=fmt_flops(plan.total_model_flops), total_tokens=plan.total_tokens, budget=fmt_flops(budget),
        within=within, warnings=list(plan.warnings),
    )
    if not within:
        problems.append(f"`{e.path}`: plans {plan.total_model_flops:.3g} model FLOPs, over the budget of {budget:.3g}")
    return view, problems


def plan_actions(repo: str, pr: int, sha: str, experiments: tuple[ExperimentFile, ...] | list[ExperimentFile],
                 plans: dict[str, PlanOutcome], prereg: dict[int, str], prereg_flops: dict[int, float | None],
                 config: RepoConfig) -> list[Action]:
    views, problems = [], []
    records: list[Action] = []
    for e in experiments:
        outcome = plans.get(e.path)
        if outcome is not None:
            records.append(RecordPlan(
                repo=repo, pr=pr, sha=sha, experiment=e.path,
                model_flops=outcome.plan.total_model_flops if outcome.plan else None,
                tokens=outcome.plan.total_tokens if outcome.plan else None,
                error=None if outcome.plan else (outcome.error or "plan failed"),
            ))
        cap = config.budgets.max_flops_per_speedrun if "/speedrun/" in e.path else config.budgets.max_flops_per_run
        planned = prereg_flops.get(e.issue) if e.issue is not None else None
        budget = min(cap, planned) if planned else cap
        view, probs = _experiment_view(e, plans.get(e.path), budget)
        if e.issue is not None and prereg.get(e.issue) != "preregistered":
            probs.append(f"`{e.path}`: issue #{e.issue} is {prereg.get(e.issue, 'missing')}, not preregistered")
        views.append(view)
        problems += probs
    ok = not problems
    next_step = ("Ready: a maintainer can comment `/run` or add the approval label." if ok and views
                 else "Push a fix and the plan is redone." if views else "")
    body = render_comment("plan", str(pr), ok=ok, sha=sha, problems=[Markup(p) for p in problems],
                          experiments=views, experiments_dir=config.experiments_dir, next_step=next_step)
    conclusion = "neutral" if not views else ("success" if ok else "failure")
    title = ("no experiments changed" if not views else
             f"{len(views)} experiment(s) planned" if ok else f"{len(problems)} problem(s)")
    summary = body.split("\n", 1)[1] if "\n" in body else body
    return [
        *records,
        UpsertCheckRun(repo=repo, head_sha=sha, name=CHECK_NAME, status="completed", conclusion=conclusion,
                       title=title, summary=summary, external_id=f"{repo}#{pr}@{sha}"),
        UpsertComment(repo=repo, issue_number=pr, kind="plan", key=str(pr), body=body),
    ]
