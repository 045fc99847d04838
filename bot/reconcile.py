"""The reconciler: follow every active run on Ray and bring its PR up to the truth.

``openlab reconcile`` makes one pass (what the scheduled Actions workflow runs); ``openlab serve`` runs the same
pass in a background loop. A pass, for each run whose reporting is not done (oldest first):

- queued, retry time reached: try to submit again (Ray was down, see :mod:`bot.dispatch`);
- submitted: ask Ray (through the executor) for the job's state; when it ends, decide the outcome once and
  store it: success (results read from the store, validated, attested), failure (Ray's message and the log
  tail), cancelled, or vanished (Ray no longer knows the job);
- finished: publish whatever is still missing, each milestone once: results committed to the PR branch (or
  attached), the run comment edited into the results table, the Pareto comment, the check run completed, the
  ledger status. A GitHub error stops that run's pass; the next pass resumes at the missing milestone.

So running it twice posts nothing twice, and a restarted bot picks every run up again from the ledger.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

from bot.budget import overrun
from bot.dispatch import RayDispatcher, RunServices, execution_page_url
from bot.escape import fenced, untrusted
from bot.github import GitHubError
from bot.jobs import BackendUnavailable, JobInfo, JobState
from bot.preregistration import credit
from bot.publish import PushRefused
from bot.results_io import RunOutputError, attest_results, read_outputs
from bot.run_report import loss_points, render_pareto, render_run_comment
from bot.run_state import RunReport
from runner import store
from runner.logs import log_context, log_event
from runner.schema import Results, dumps_results

log = logging.getLogger("openlab.bot.reconcile")
CHECK_CONCLUSION = {"succeeded": "success", "failed": "failure", "cancelled": "cancelled", "refused": "cancelled"}


class Reconciler:
    def __init__(self, services: RunServices) -> None:
        self.s = services
        self.dispatcher = RayDispatcher(services)

    def adopt(self) -> int:
        """Give a report row to every queued run the ledger has without one: runs recorded by a front door that
        had no Ray dispatcher (a worker process, an Actions job without Ray settings, a crash before the row)."""
        from sqlalchemy import select

        from bot.ledger import runs

        with self.s.ledger.engine.connect() as conn:
            queued = [r[0] for r in conn.execute(select(runs.c.run_id).where(runs.c.status == "queued"))]
        n = 0
        for run_id in queued:
            if self.s.states.get(run_id) is None:
                run = self.s.ledger.run(run_id)
                if run is not None:
                    self.s.states.create(RunReport(run_id=run_id, trigger_comment_id=self.dispatcher._trigger_comment(run)))
                    n += 1
        return n

    def run_until_done(self, run_id: str, timeout_s: float, interval_s: float = 1.0) -> dict[str, Any]:
        """Reconcile until ``run_id`` is fully reported; its ledger row. TimeoutError past ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.run_once()
            report = self.s.states.get(run_id)
            if report is not None and report.phase == "done":
                return self.s.ledger.run(run_id) or {}
            if time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} not done after {timeout_s:.0f}s: {report}")
            time.sleep(interval_s)

    def run_once(self) -> dict[str, int]:
        """One pass over every unfinished run. Returns counts by what happened (for logs and tests)."""
        counts: dict[str, int] = {}
        adopted = self.adopt()
        if adopted:
            counts["adopted"] = adopted
        for report in self.s.states.active():
            run = self.s.ledger.run(report.run_id)
            if run is None:
                continue
            with log_context(repo=run["repo"], pr=run["pr"], sha=run["sha"], run_id=run["run_id"]):
                try:
                    what = self._step(run, report)
                except GitHubError as err:
                    what = "github_error"
                    log_event(log, "GitHub failed; will resume next pass", level=logging.WARNING, error=str(err))
                    if err.status in (401, 403, 404) and report.phase == "finished" and report.outcome == "cancelled":
                        # The installation or repository is gone (installation.deleted): nothing left to tell.
                        report.phase, report.last_error = "done", f"not shown on GitHub: {err}"
                        self.s.states.save(report)
            counts[what] = counts.get(what, 0) + 1
        return counts

    def _step(self, run: dict[str, Any], report: RunReport) -> str:
        if run["status"] == "cancelled" and report.phase in ("queued", "submitted"):
            # Cancelled through a front door without the Ray dispatcher: stop the job now.
            self.dispatcher.cancel(run, run.get("detail") or "cancelled")
            return "cancelled"
        if report.phase == "queued":
            if run["status"] != "queued":
                report.phase = "finished" if run["status"] in ("cancelled", "refused") else report.phase
                report.outcome = report.outcome or run["status"]
                self.s.states.save(report)
            elif report.next_try_at > self.s.clock():
                return "waiting_retry"
            else:
                self.dispatcher.try_submit(run["run_id"])
                return "submit_tried"
        if report.phase == "submitted":
            try:
                info = self.s.backend.info(run["run_id"])
            except BackendUnavailable as err:
                report.last_error = str(err)
                self.s.states.save(report)
                return "ray_unavailable"
            if not info.state.terminal:
                self._still_running(run, report, info)
                return "running"
            self._decide(run, report, info)
        if report.phase == "finished":
            if report.outcome == "cancelled" and report.last_error and report.last_error.startswith("cancel pending"):
                try:
                    self.s.backend.cancel(run["run_id"])
                    report.last_error = None
                except BackendUnavailable:
                    pass
            publish_outcome(self.s, run, report)
            return report.outcome or "finished"
        return report.phase

    def _still_running(self, run: dict[str, Any], report: RunReport, info: JobInfo) -> None:
        from bot.dispatch import announce_running

        if info.state.value != report.job_state:
            report.job_state = info.state.value
            report.done = [m for m in report.done if m != "comment_started"]  # refresh "waiting" -> "running"
            self.s.states.save(report)
        announce_running(self.s, run, report, info)

    def _decide(self, run: dict[str, Any], report: RunReport, info: JobInfo) -> None:
        """Fix the run's outcome once (before anything is published), so every later pass reports the same."""
        report.job_state = info.state.value
        report.job_started_at = info.started_at.isoformat() if info.started_at else None
        report.job_finished_at = info.finished_at.isoformat() if info.finished_at else None
        if info.state == JobState.SUCCEEDED:
            self._collect(run, report, info)
        elif info.state == JobState.STOPPED:
            report.outcome, report.reason = "cancelled", report.reason or "the Ray job was stopped"
        elif info.state == JobState.MISSING:
            report.outcome = "failed"
            report.reason = ("the job vanished: Ray has no record of it (the cluster was restarted or replaced). "
                             "Comment `/rerun` to start attempt "
                             f"{run['attempt'] + 1}.")
        else:
            report.outcome = "failed"
            first = (info.message or "no message from Ray").strip().splitlines()[0][:300]
            report.reason = f"the Ray job failed: {first} (the job log's last lines are below)"
            report.log_tail = self.s.backend.logs_tail(run["run_id"]) or None
        report.phase = "finished"
        self.s.states.save(report)
        log_event(log, "run finished", outcome=report.outcome, reason=report.reason)

    def _collect(self, run: dict[str, Any], report: RunReport, info: JobInfo) -> None:
        prefix = self.s.prefix(self.s.repo_config(run))
        try:
            out = read_outputs(prefix, run["run_id"])
        except RunOutputError as err:
            report.outcome, report.reason = "failed", f"the job succeeded but its results are unusable: {err}"
            report.log_tail = self.s.backend.logs_tail(run["run_id"]) or None
            return
        # Credit from the preregistration (the issue form and GitHub), never from what the PR's code wrote.
        issue = report.preregistration
        prereg = self.s.ledger.preregistration(run["repo"], issue) if issue else None
        credited = credit(out.results, prereg, issue=issue, pr=run["pr"])
        results, unsigned = attest_results(
            credited, run_id=run["run_id"], sha=run["sha"], started_at=info.started_at,
            finished_at=info.finished_at, private_pem=self.s.signing_key,
            path=results_path(run["experiment"], self.s.repo_config(run).experiments_dir),
        )
        attested_url = store.join(prefix, "attested", run["run_id"], "results.json")
        store.atomic_write_text(attested_url, dumps_results(results))
        report.results = results.model_dump(mode="json")
        report.results_url = attested_url
        report.record_url = out.record_url
        report.execution_url = report.execution_url or execution_page_url(
            self.s.repo_config(run).site_url, run["run_id"]
        )
        report.metrics = loss_points(out.metrics_text or "")
        report.budget_overrun = overrun(results.tokens, results.model_flops,
                                        self.s.ledger.plan(run["repo"], run["sha"], run["experiment"]))
        if report.budget_overrun:
            log_event(log, "budget_overrun", level=logging.WARNING, detail=report.budget_overrun)
        report.outcome = "succeeded"
        report.reason = unsigned


def results_path(experiment: str, experiments_dir: str = "experiments") -> str:
    """Where a run's results file lives in the repository (the leaderboard reads ``experiments/**/results.json``)."""
    parts = experiment.split("/")
    if len(parts) >= 3 and parts[-3] == "speedrun":
        return "/".join([*parts[:-1], "results.json"])
    stem = parts[-1].removesuffix(".py")
    number = stem[3:].split("_", 1)[0] if stem.startswith("exp") else ""
    folder = f"exp{int(number)}" if number.isdigit() else stem
    return f"{experiments_dir.rstrip('/')}/results/{folder}/results.json"


def _commit(s: RunServices, run: dict[str, Any], report: RunReport, results: Results) -> None:
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
        try:
            s.publisher(run).commit_file(head_repo, branch, path, dumps_results(results),
                                    f"openlab: results of run {run['run_id']} ({run['sha'][:7]})")
            report.committed_path = path
            report.commit_note = f"📝 Committed `{path}` to `{branch}`."
        except PushRefused as err:
            report.commit_note = f"📎 The branch refused the commit ({err}), so the results are attached. {how}"


def _chart(s: RunServices, run: dict[str, Any], report: RunReport, results: Results,
           others: list[Results]) -> Markup | None:
    """Commit the BPB-vs-FLOPs chart beside the committed results; its image link for the comment, or None."""
    from bot.chart import CHART_NAME, pareto_svg
    from bot.run_report import link

    if not report.committed_path:
        return None  # attached, not committed: no public place for the image
    pull = s.gh(run).get_pull(run["repo"], run["pr"])
    head = pull.get("head") or {}
    repo, branch, web = (head.get("repo") or {}).get("full_name"), head.get("ref"), (head.get("repo") or {}).get(
        "html_url")
    if not repo or not branch or not web:
        return None
    path = f"{report.committed_path.rsplit('/', 1)[0]}/{CHART_NAME}"
    try:
        s.publisher(run).commit_file(repo, branch, path, pareto_svg(results, others),
                                     f"openlab: BPB-vs-FLOPs chart of run {run['run_id']}")
    except PushRefused:
        return None
    image = link("BPB vs FLOPs: this run against the frontier", f"{web}/blob/{quote(branch)}/{path}?raw=true")
    return Markup("!") + image if image else None


def _pareto(s: RunServices, run: dict[str, Any], report: RunReport, results: Results) -> None:
    from leaderboard.frontier import pareto_update
    from leaderboard.load import load_runs

    config = s.repo_config(run)
    loaded = load_runs(s.leaderboard_results)
    others = [r.results for r in loaded.runs if r.results.run_id != results.run_id]
    update = pareto_update(results, others, tracks=config.tracks)
    chart = _chart(s, run, report, results, others)
    body = render_pareto(update, results, key=run["run_id"], others=others, chart=chart)
    from bot.actions import UpsertComment
    from bot.executor import Executor

    Executor(s.gh(run), s.ledger, s.bot_login).apply(
        UpsertComment(repo=run["repo"], issue_number=run["pr"], kind="pareto", key=run["run_id"], body=body))


def publish_outcome(s: RunServices, run: dict[str, Any], report: RunReport) -> None:
    """Publish every milestone of a decided outcome that is not published yet (each exactly once)."""
    from bot.reproductions import publish_reproduction, seeds_of

    if seeds_of(s.ledger.engine, run["run_id"]) and publish_reproduction(s, run, report):
        return  # `/verify`: the seeds' aggregate was published instead of one run's results
    outcome = report.outcome or "failed"
    results = Results.model_validate(report.results) if report.results and outcome == "succeeded" else None
    if run["status"] != outcome:
        # The ledger first: the sticky comment, the check run and the reports index all read this row.
        s.ledger.set_run_status(run["run_id"], outcome, report.reason)
        run = {**run, "status": outcome}
    if results is not None and not report.has("committed"):
        _commit(s, run, report, results)
        s.states.mark(report, "committed")
    if not report.has("comment_final"):
        attach = dumps_results(results) if results is not None and not report.committed_path else None
        line = {"succeeded": "succeeded", "failed": "failed", "cancelled": "cancelled",
                "refused": "refused"}.get(outcome, outcome)
        body = render_run_comment(run, report, status=outcome, status_line=line, attachment=attach)
        s.upsert_comment(run, body)
        s.states.mark(report, "comment_final")
    if results is not None and not report.has("pareto"):
        _pareto(s, run, report, results)
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


def reconcile_loop(reconciler: Reconciler, stop: threading.Event, interval_s: float = 15.0) -> None:
    """The background loop of ``openlab serve``: a pass every ``interval_s`` until ``stop`` is set."""
    while not stop.is_set():
        try:
            reconciler.run_once()
        except Exception:  # noqa: BLE001 - the loop must survive anything one pass hits; it is logged
            log.exception("reconcile pass failed")
        stop.wait(interval_s)


def start_reconcile_thread(services: RunServices, interval_s: float = 15.0) -> tuple[threading.Thread, threading.Event]:
    stop = threading.Event()
    t = threading.Thread(target=reconcile_loop, args=(Reconciler(services), stop, interval_s),
                         name="openlab-reconcile", daemon=True)
    t.start()
    return t, stop
