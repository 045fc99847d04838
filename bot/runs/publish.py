"""Publishing a run on its pull request, each milestone once: the 🚀 and the check run in progress when it starts
(:func:`announce_running`), then the results commit (results.json, chart and metrics in one commit), the run
comment, the Pareto comment and the completed check run when its outcome is decided (:func:`publish_outcome`).

The dispatcher calls it for runs it refuses or cancels, the reconciler for runs that end; both keep no publishing
of their own, so neither imports the other.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

from bot.github.client import GitHubError
from bot.github.escape import fenced, untrusted
from bot.runs.chart import CHART_NAME
from bot.runs.jobs import JobInfo, JobState
from bot.runs.publisher import PushRefused
from bot.runs.report import render_pareto, render_run_comment
from bot.runs.results_io import METRICS, public_metrics, read_metrics
from bot.runs.services import RunServices
from bot.runs.state import RunReport
from runner.logs import log_event
from runner.schema import Results, dumps_results

log = logging.getLogger("openlab.bot.publish")
CHECK_CONCLUSION = {"succeeded": "success", "failed": "failure", "cancelled": "cancelled", "refused": "cancelled"}


def announce_running(s: RunServices, run: dict[str, Any], report: RunReport, info: JobInfo) -> None:
    """🚀 on the command, the check run in progress, the run comment: each once (milestones)."""
    try:
        if report.trigger_comment_id and not report.has("rocket"):
            s.publisher(run).react(run["repo"], report.trigger_comment_id, "rocket")
            s.states.mark(report, "rocket")
        if not report.has("check_started"):
            s.publisher(run).check_run(
                run["repo"], run["run_id"], run["sha"], status="in_progress",
                title=f"running {run['experiment']}", summary=f"Ray job `{run['run_id']}` for `{run['sha'][:12]}`.",
                details_url=info.dashboard_url or report.wandb_url, started_at=info.started_at,
            )
            s.states.mark(report, "check_started")
        if not report.has("comment_started"):
            line = "running on Ray" if info.state == JobState.RUNNING else "submitted to Ray, waiting for resources"
            s.upsert_comment(run, render_run_comment(run, report, status="running", status_line=line))
            s.states.mark(report, "comment_started")
    except GitHubError as err:
        # The job runs regardless; the reconciler publishes what is missing on its next pass.
        report.last_error = f"GitHub: {err}"
        s.states.save(report)
        log_event(log, "could not announce the run yet", level=logging.WARNING, error=str(err))


def results_path(experiment: str, experiments_dir: str = "experiments") -> str:
    """Where a run's results file lives in the repository (the leaderboard reads ``experiments/**/results.json``)."""
    parts = experiment.split("/")
    if len(parts) >= 3 and parts[-3] == "speedrun":
        return "/".join([*parts[:-1], "results.json"])
    stem = parts[-1].removesuffix(".py")
    number = stem[3:].split("_", 1)[0] if stem.startswith("exp") else ""
    folder = f"exp{int(number)}" if number.isdigit() else stem
    return f"{experiments_dir.rstrip('/')}/results/{folder}/results.json"


def _others(s: RunServices, results: Results) -> list[Results]:
    """The leaderboard's runs other than this one (the chart's and the Pareto update's comparison)."""
    from leaderboard.load import load_runs

    return [r.results for r in load_runs(s.leaderboard_results).runs if r.results.run_id != results.run_id]


def result_files(path: str, results: Results, others: list[Results], metrics_text: str | None) -> dict[str, str]:
    """What the results commit adds beside each other: results.json, the BPB-vs-FLOPs chart and, when the run
    logged any, its metrics (rebuilt by :func:`public_metrics`) for the run page's curves."""
    from bot.runs.chart import CHART_NAME, pareto_svg

    folder = path.rsplit("/", 1)[0]
    files = {path: dumps_results(results), f"{folder}/{CHART_NAME}": pareto_svg(results, others)}
    metrics = public_metrics(metrics_text) if metrics_text else None
    if metrics:
        files[f"{folder}/{METRICS}"] = metrics
    return files


def _commit(s: RunServices, run: dict[str, Any], report: RunReport, results: Results, others: list[Results]) -> None:
    pull = s.gh(run).get_pull(run["repo"], run["pr"])
    path = results_path(run["experiment"], s.repo_config(run).experiments_dir)
    head_repo = (pull.get("head", {}).get("repo") or {}).get("full_name")
    branch = pull.get("head", {}).get("ref")
    same_repo = head_repo == run["repo"]
    how = (f"Add it as `{path}` to the PR branch (expand *results.json* above, save it there, commit and push) "
           "so the leaderboard picks it up when this PR merges.")
    if pull.get("state") != "open" or not head_repo or not branch:
        report.commit_note = f"📎 The PR is closed or its branch is gone, so the results are attached. {how}"
    elif not same_repo and not pull.get("maintainer_can_modify"):
        report.commit_note = f"📎 This fork does not allow edits by maintainers, so the results are attached. {how}"
    else:
        files = result_files(path, results, others, read_metrics(report.metrics_url) if report.metrics_url else None)
        try:
            sha = s.publisher(run).commit_files(head_repo, branch, files,
                                                f"openlab: results of run {run['run_id']} ({run['sha'][:7]})")
            report.committed_path = path
            # At the commit, not the branch: the image outlives the branch once the PR is merged and it is deleted.
            web = (pull.get("head", {}).get("repo") or {}).get("html_url")
            at = sha or quote(branch)
            report.chart_url = f"{web}/blob/{at}/{path.rsplit('/', 1)[0]}/{CHART_NAME}?raw=true" if web else None
            report.commit_note = f"📝 Committed `{path}` with its chart and metrics to `{branch}` (one commit)."
        except PushRefused as err:
            report.commit_note = f"📎 The branch refused the commit ({err}), so the results are attached. {how}"


def _pareto(s: RunServices, run: dict[str, Any], report: RunReport, results: Results, others: list[Results]) -> None:
    from bot.actions import UpsertComment
    from bot.executor import Executor
    from bot.runs.report import link
    from leaderboard.frontier import pareto_update

    update = pareto_update(results, others, tracks=s.repo_config(run).tracks)
    image = link("BPB vs FLOPs: this run against the frontier", report.chart_url) if report.chart_url else None
    chart = Markup("!") + image if image else None
    body = render_pareto(update, results, key=run["run_id"], others=others, chart=chart)
    Executor(s.gh(run), s.ledger, s.bot_login).apply(
        UpsertComment(repo=run["repo"], issue_number=run["pr"], kind="pareto", key=run["run_id"], body=body))


def publish_outcome(s: RunServices, run: dict[str, Any], report: RunReport) -> None:
    """Publish every milestone of a decided outcome that is not published yet (each exactly once)."""
    from bot.runs.reproductions import publish_reproduction, seeds_of

    if seeds_of(s.ledger.engine, run["run_id"]) and publish_reproduction(s, run, report):
        return  # `/verify`: the seeds' aggregate was published instead of one run's results
    outcome = report.outcome or "failed"
    results = Results.model_validate(report.results) if report.results and outcome == "succeeded" else None
    if run["status"] != outcome:
        # The ledger first: the sticky comment, the check run and the reports index all read this row.
        s.ledger.set_run_status(run["run_id"], outcome, report.reason)
        run = {**run, "status": outcome}
    others = _others(s, results) if results is not None and not report.has("pareto") else []
    if results is not None and not report.has("committed"):
        _commit(s, run, report, results, others)
        s.states.mark(report, "committed")
    if not report.has("comment_final"):
        attach = dumps_results(results) if results is not None and not report.committed_path else None
        line = {"succeeded": "succeeded", "failed": "failed", "cancelled": "cancelled",
                "refused": "refused"}.get(outcome, outcome)
        body = render_run_comment(run, report, status=outcome, status_line=line, attachment=attach)
        s.upsert_comment(run, body)
        s.states.mark(report, "comment_final")
    if results is not None and not report.has("pareto"):
        _pareto(s, run, report, results, others)
        s.states.mark(report, "pareto")
    if not report.has("check_done") and (report.has("check_started") or outcome != "refused"):
        summary = _check_summary(run, report, results)
        text = str(fenced(report.log_tail)) if report.log_tail else None
        s.publisher(run).check_run(
            run["repo"], run["run_id"], run["sha"], status="completed", conclusion=CHECK_CONCLUSION[outcome],
            title=f"{outcome}: {run['experiment']}"[:200], summary=summary, text=text,
            details_url=report.dashboard_url or report.wandb_url,
        )
        s.states.mark(report, "check_done")
    report.phase = "done"
    s.states.save(report)


def _check_summary(run: dict[str, Any], report: RunReport, results: Results | None) -> str:
    if results is not None:
        flag = f"⚠️ budget_overrun: {untrusted(report.budget_overrun)}. " if report.budget_overrun else ""
        return flag + (f"BPB **{results.bpb:.4f}** with {results.model_flops:.3g} model FLOPs "
                f"({results.params:,} params, {results.tokens:,} tokens). Run `{run['run_id']}`.")
    return untrusted(report.reason or "no reason recorded", 3000)
