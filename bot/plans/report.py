"""Turn plan outcomes into the `openlab/plan` check run on the head SHA and the PR's sticky plan comment.

Used by the pull_request handler (App mode: the bot plans in its sandbox) and by `openlab event plan_report DIR`
(Actions mode: an unprivileged workflow planned the PR and left the JSON as an artifact, read here as data).
"""

from __future__ import annotations

from markupsafe import Markup

from bot.actions import Action, RecordPlan, UpsertCheckRun, UpsertComment
from bot.config.repo_config import RepoConfig
from bot.forms.linking import ExperimentFile
from bot.github.escape import code, untrusted
from bot.github.render import fmt_flops, render_comment
from bot.plans.sandbox import PlanOutcome
from bot.runs.budget import TrustedBudget, recompute

CHECK_NAME = "openlab/plan"


def _problem(path: str, text: str) -> Markup:
    """One line of the problems list: the file as code, the rest (PR-influenced) escaped as running text."""
    return code(path) + Markup(": ") + Markup(untrusted(text, 500))


def _experiment_view(e: ExperimentFile, outcome: PlanOutcome | None, budget: float,
                     trusted: TrustedBudget | None) -> tuple[dict, list[Markup]]:
    # Linking problems are the bot's own sentences (naming rules from the repo config), so only the path is escaped.
    problems = [code(e.path) + Markup(": ") + Markup(p) for p in e.problems]
    view: dict = {"path": e.path, "issue": e.issue, "error": None, "steps": [], "warnings": []}
    if outcome is None:
        view["error"] = "not planned" if not e.problems else "fix the file name first"
        return view, problems
    if outcome.error or outcome.plan is None or trusted is None:
        view["error"] = outcome.error
        problems.append(_problem(e.path, f"plan failed: {outcome.error}"))
        return view, problems
    plan = outcome.plan
    # The gate uses the bot's own recomputation: the plan's numbers come from the PR's process.
    within = trusted.model_flops <= budget
    view.update(
        steps=[{"identity": s.identity, "kind": s.kind, "action": s.action, "flops": fmt_flops(b.model_flops),
                "tokens": b.tokens if b.tokens is not None else "n/a"} for s, b in zip(plan.steps, trusted.steps, strict=True)],
        total_flops=fmt_flops(trusted.model_flops), total_tokens=trusted.tokens, budget=fmt_flops(budget),
        within=within, warnings=list(plan.warnings),
    )
    problems += [_problem(e.path, p) for p in trusted.problems]
    if not within:
        problems.append(_problem(e.path, f"plans {trusted.model_flops:.3g} model FLOPs (recomputed by the bot), "
                                         f"over the budget of {budget:.3g}"))
    return view, problems


def _budget(e: ExperimentFile, prereg_flops: dict[int, float | None], config: RepoConfig) -> float:
    cap = config.budgets.max_flops_per_speedrun if "/speedrun/" in e.path else config.budgets.max_flops_per_run
    planned = prereg_flops.get(e.issue) if e.issue is not None else None
    return min(cap, planned) if planned else cap


def plan_actions(repo: str, pr: int, sha: str, experiments: tuple[ExperimentFile, ...] | list[ExperimentFile],
                 plans: dict[str, PlanOutcome], prereg: dict[int, str], prereg_flops: dict[int, float | None],
                 config: RepoConfig) -> list[Action]:
    views, problems = [], []
    records: list[Action] = []
    for e in experiments:
        outcome = plans.get(e.path)
        trusted = recompute(outcome.plan) if outcome is not None and outcome.plan is not None else None
        if outcome is not None:
            # The ledger's plan record gates dispatch and sets the trainer's token cap: trusted numbers only, and
            # a plan whose own numbers do not add up is recorded as failed.
            error = (None if trusted and not trusted.problems
                     else trusted.problems[0] if trusted else (outcome.error or "plan failed"))
            records.append(RecordPlan(
                repo=repo, pr=pr, sha=sha, experiment=e.path,
                model_flops=trusted.model_flops if trusted else None, tokens=trusted.tokens if trusted else None,
                error=error,
            ))
        view, probs = _experiment_view(e, outcome, _budget(e, prereg_flops, config), trusted)
        if e.issue is not None and prereg.get(e.issue) != "preregistered":
            status = untrusted(prereg.get(e.issue, "missing"), 40)
            probs.append(code(e.path) + Markup(f": issue #{int(e.issue)} is {status}, not preregistered"))
        views.append(view)
        problems += probs
    ok = not problems
    next_step = ("Ready: a maintainer can comment `/run` or add the approval label." if ok and views
                 else "Push a fix and the plan is redone." if views else "")
    body = render_comment("plan", str(pr), ok=ok, sha=sha, problems=problems,
                          experiments=views, experiments_dir=config.experiments_dir, next_step=Markup(next_step))
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
