"""The reconciler: follow every active run on Ray and bring its PR up to the truth.

``openlab reconcile`` makes one pass (what the scheduled Actions workflow runs); ``openlab serve`` runs the same
pass in a background loop. A pass, for each run whose reporting is not done (oldest first):

- queued, retry time reached: try to submit again (Ray was down, see :mod:`bot.runs.dispatch`);
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

from bot.forms.preregistration import credit
from bot.github.client import GitHubError
from bot.runs.budget import overrun
from bot.runs.dispatch import RayDispatcher
from bot.runs.jobs import BackendUnavailable, JobInfo, JobState
from bot.runs.publish import announce_running, publish_outcome, results_path
from bot.runs.report import loss_points
from bot.runs.results_io import RunOutputError, attest_results, read_outputs
from bot.runs.services import RunServices, execution_page_url
from bot.runs.state import RunReport
from runner import store
from runner.logs import log_context, log_event
from runner.schema import dumps_results

log = logging.getLogger("openlab.bot.reconcile")


class Reconciler:
    def __init__(self, services: RunServices) -> None:
        self.s = services
        self.dispatcher = RayDispatcher(services)

    def adopt(self) -> int:
        """Give a report row to every queued run the ledger has without one: runs recorded by a front door that
        had no Ray dispatcher (a worker process, an Actions job without Ray settings, a crash before the row)."""
        from sqlalchemy import select

        from bot.ledger_tables import runs

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
        report.metrics_url = out.metrics_url
        report.budget_overrun = overrun(results.tokens, results.model_flops,
                                        self.s.ledger.plan(run["repo"], run["sha"], run["experiment"]))
        if report.budget_overrun:
            log_event(log, "budget_overrun", level=logging.WARNING, detail=report.budget_overrun)
        report.outcome = "succeeded"
        report.reason = unsigned


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
