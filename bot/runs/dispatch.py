"""The Ray dispatcher: turns a queued run into a Ray job pinned to its approved SHA, or says why not.

Plugged into the bot core's action executor (``Executor(dispatcher=RayDispatcher(...))``): applying a
``DispatchRun`` records the run as queued and calls :meth:`RayDispatcher.submit`; ``CancelRun`` calls
:meth:`RayDispatcher.cancel`. The reconciler calls :meth:`RayDispatcher.try_submit` again for runs still queued.

Before submitting, the PR is re-read (github-bots.md §9.13: an ``issue_comment`` carries no SHA and state moves
between the comment and the dispatch): a closed PR, a head that moved past the approved SHA, a plan over the
preregistered budget, or an exceeded quota refuses the run with the reason on the PR.

Idempotence: the Ray ``submission_id`` is the run id. If the bot dies after Ray accepted the job but before the
ledger says so, the next attempt first asks Ray about that id and adopts the running job instead of submitting
again; a second submit would be refused by Ray anyway. If Ray is unreachable the run stays queued, the comment
says so, and the reconciler retries with exponential backoff (15 s doubling to at most 10 min).
"""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from typing import Any

from bot.config.quotas import quota_problem, quotas_of
from bot.config.repo_config import RepoConfig
from bot.forms.linking import body_preregistration
from bot.github.client import GitHubError
from bot.runs.jobs import BackendUnavailable, JobBackend, JobInfo, JobRejected, JobSpec, JobState
from bot.runs.publish import announce_running, publish_outcome
from bot.runs.report import render_run_comment
from bot.runs.services import RunServices, execution_page_url
from bot.runs.state import RunReport
from runner.logs import log_context, log_event

log = logging.getLogger("openlab.bot.dispatch")
BACKOFF_START_S = 15.0
BACKOFF_MAX_S = 600.0


def backoff(tries: int) -> float:
    return min(BACKOFF_MAX_S, BACKOFF_START_S * 2 ** max(0, tries - 1))


class RayDispatcher:
    """The bot core's ``Dispatcher`` for real: submit to Ray, cancel on Ray, report on the PR."""

    def __init__(self, services: RunServices) -> None:
        self.s = services

    # -- the Dispatcher protocol ---------------------------------------------------------------------------------
    def submit(self, run: dict[str, Any]) -> None:
        report = self.s.states.get(run["run_id"])
        if report is None:
            report = RunReport(run_id=run["run_id"], trigger_comment_id=run.get("comment_id"))
            if report.trigger_comment_id is None:
                report.trigger_comment_id = self._trigger_comment(run)
            self.s.states.create(report)
        self.try_submit(run["run_id"])

    def _trigger_comment(self, run: dict[str, Any]) -> int | None:
        """The comment that asked for this run (for the 🚀) when the action did not carry it (an action queued
        before it did): the requester's latest `/run` or `/rerun` on the PR. None when the run came from the label."""
        from bot.commands.parse import find_commands

        try:
            comments = self.s.gh(run).issue_comments(run["repo"], run["pr"])
        except GitHubError:
            return None
        for c in reversed(comments):
            if (c.get("user") or {}).get("login") != run["requested_by"]:
                continue
            found, _ = find_commands(c.get("body"), {"run", "rerun"})
            if found:
                return int(c["id"])
        return None

    def cancel(self, run: dict[str, Any], reason: str) -> None:
        with log_context(repo=run["repo"], pr=run["pr"], sha=run["sha"], run_id=run["run_id"]):
            report = self.s.states.get(run["run_id"]) or RunReport(run_id=run["run_id"])
            if self.s.ledger.run(run["run_id"]) and self.s.ledger.run(run["run_id"])["status"] != "cancelled":
                self.s.ledger.set_run_status(run["run_id"], "cancelled", reason)
            report.phase, report.outcome, report.reason = "finished", "cancelled", reason
            self.s.states.save(report)
            try:
                self.s.backend.cancel(run["run_id"])
            except BackendUnavailable as err:
                # Ray is down, so the job is not consuming it either; the reconciler stops it once Ray is back.
                report.last_error = f"cancel pending: {err}"
                self.s.states.save(report)
                log_event(log, "cancel deferred", error=str(err))
            try:
                publish_outcome(self.s, self.s.ledger.run(run["run_id"]) or run, report)
            except GitHubError as err:
                # The job is stopped; the reconciler publishes the rest (or gives up if the installation is gone).
                log_event(log, "cancel not yet shown on GitHub", level=logging.WARNING, error=str(err))

    # -- submission ----------------------------------------------------------------------------------------------
    def try_submit(self, run_id: str) -> None:
        run = self.s.ledger.run(run_id)
        report = self.s.states.get(run_id)
        if run is None or report is None or run["status"] != "queued" or report.phase != "queued":
            return
        with log_context(repo=run["repo"], pr=run["pr"], sha=run["sha"], run_id=run_id):
            self._try_submit(run, report)

    def _try_submit(self, run: dict[str, Any], report: RunReport) -> None:
        config = self.s.repo_config(run)
        pull = self.s.gh(run).get_pull(run["repo"], run["pr"])
        problem = self._refusal(run, report, pull, config)
        if problem:
            self._refuse(run, report, problem)
            return
        try:
            info = self.s.backend.info(run["run_id"])
            if info.state == JobState.MISSING:
                info = self.s.backend.submit(self._spec(run, pull, config))
                log_event(log, "submitted", state=info.state.value)
            else:
                log_event(log, "adopted a job Ray already had (submission id protects against a second job)")
        except BackendUnavailable as err:
            self._retry_later(run, report, str(err))
            return
        except JobRejected as err:
            self._reject(run, report, f"Ray did not accept the job: {err}")
            return
        self._started(run, report, info, config)

    def _refusal(self, run: dict[str, Any], report: RunReport, pull: dict[str, Any], config: RepoConfig) -> str | None:
        if pull.get("state") != "open" or pull.get("merged"):
            return "the pull request is closed"
        head = pull["head"]["sha"]
        if head != run["sha"]:
            return (f"the PR head moved to `{head[:7]}` after `{run['sha'][:7]}` was approved; "
                    "approve the new head with `/run`")
        planned = self.s.ledger.plan(run["repo"], run["sha"], run["experiment"])
        if planned and planned.get("error"):
            return f"the plan of `{run['experiment']}` failed at `{run['sha'][:7]}`: {planned['error']}"
        if planned and planned.get("model_flops") and report.planned_flops is None:
            report.planned_flops = float(planned["model_flops"])
        from bot.runs.reproductions import (
            budget_problem,  # a `/verify` plans N seeds: N x the single run's FLOPs
        )

        if problem := budget_problem(self.s.ledger.engine, run, report, config, planned):
            return problem
        issue = self._preregistration(run, pull)
        report.preregistration = issue
        prereg = self.s.ledger.preregistration(run["repo"], issue) if issue else None
        budget = prereg.get("planned_flops") if prereg else None
        if report.planned_flops and budget and report.planned_flops > budget:
            return (f"the plan needs {report.planned_flops:.3g} FLOPs, over the {budget:.3g} preregistered in "
                    f"issue {issue}")
        if report.planned_flops is None and budget:
            report.planned_flops = float(budget)  # quotas count the preregistered budget until results say more
        flops = {r.run_id: r.planned_flops or 0.0 for r in self.s.states.active()}
        return quota_problem(
            quotas_of(config), run_id=run["run_id"], pr=run["pr"], user=run["requested_by"],
            planned_flops=report.planned_flops, runs=self.s.ledger.runs(run["repo"]), flops_of=flops,
        )

    @staticmethod
    def _preregistration(run: dict[str, Any], pull: dict[str, Any]) -> int | None:
        name = run["experiment"].rsplit("/", 1)[-1]
        if name.startswith("exp") and name[3:].split("_", 1)[0].isdigit():
            return int(name[3:].split("_", 1)[0])
        return body_preregistration(pull.get("body"))

    def _spec(self, run: dict[str, Any], pull: dict[str, Any], config: RepoConfig) -> JobSpec:
        source = self.s.source or (pull.get("base", {}).get("repo") or {}).get("clone_url")
        env = {
            "OPENLAB_RUN_ID": run["run_id"], "WANDB_RUN_ID": run["run_id"], "WANDB_PROJECT": config.wandb_project,
            "OPENLAB_GIT_COMMIT": run["sha"], "OPENLAB_PR": str(run["pr"]),
        }
        if self.s.wandb_entity:
            env["WANDB_ENTITY"] = self.s.wandb_entity
        planned = self.s.ledger.plan(run["repo"], run["sha"], run["experiment"])
        if planned and planned.get("tokens"):  # the bot's own count (bot.runs.budget); the trainer refuses more
            env["OPENLAB_APPROVED_TOKENS"] = str(int(planned["tokens"]))
        from bot.runs.reproductions import job_env

        env.update(job_env(self.s.ledger.engine, run["run_id"]))
        return JobSpec(run_id=run["run_id"], repo=run["repo"], pr=run["pr"], sha=run["sha"],
                       experiment=run["experiment"], prefix=self.s.prefix(config), source=source, env=env)

    def _refuse(self, run: dict[str, Any], report: RunReport, problem: str) -> None:
        self._reject(run, report, problem, outcome="refused")

    def _reject(self, run: dict[str, Any], report: RunReport, problem: str, outcome: str = "failed") -> None:
        log_event(log, outcome, reason=problem)
        self.s.ledger.set_run_status(run["run_id"], outcome, problem)
        report.phase, report.outcome, report.reason = "finished", outcome, problem
        self.s.states.save(report)
        publish_outcome(self.s, self.s.ledger.run(run["run_id"]) or run, report)

    def _retry_later(self, run: dict[str, Any], report: RunReport, error: str) -> None:
        report.submit_tries += 1
        report.next_try_at = self.s.clock() + backoff(report.submit_tries)
        report.last_error = error
        self.s.states.save(report)
        log_event(log, "Ray unavailable: run stays queued", level=logging.WARNING, error=error,
                  tries=report.submit_tries, retry_in_s=backoff(report.submit_tries))
        when = datetime.fromtimestamp(report.next_try_at, UTC).strftime("%H:%M:%S UTC")
        body = render_run_comment(
            run, report, status="queued",
            status_line=f"queued: Ray is unreachable, retry {report.submit_tries} at {when} (backoff)",
            notice=f"The run is safe in the queue and starts when Ray answers again. Last error: {error}",
        )
        self.s.upsert_comment(run, body)

    def _started(self, run: dict[str, Any], report: RunReport, info: JobInfo, config: RepoConfig) -> None:
        self.s.ledger.set_run_status(run["run_id"], "running")
        report.phase = "submitted"
        report.job_state = info.state.value
        report.dashboard_url = info.dashboard_url
        report.record_url = f"{self.s.prefix(config).rstrip('/')}/experiments/{run['run_id']}.json"
        report.execution_url = execution_page_url(config.site_url, run["run_id"])
        if self.s.wandb_entity:
            report.wandb_url = f"https://wandb.ai/{self.s.wandb_entity}/{config.wandb_project}/runs/{run['run_id']}"
        report.last_error = None
        self.s.states.save(report)
        announce_running(self.s, run, report, info)


def attach_to_bot(bot: Any, backend: JobBackend | None = None) -> RunServices:
    """Plug the Ray dispatcher into a bot core ``Bot`` (before its first delivery) and return the services
    the reconciler shares with it: one ledger, one GitHub client per installation."""
    from bot.runs.jobs import RayJobs

    services = RunServices.from_env(lambda inst: bot.env_for(inst)[0].gh, bot.ledger, backend or RayJobs(),
                                    bot.settings.bot_login)
    bot.dispatcher = RayDispatcher(services)
    bot._clients.clear()  # executors built before this point hold the record-only dispatcher
    return services


def services_from_env() -> RunServices:
    """App mode (``OPENLAB_APP_ID`` + key) or Actions mode (``GITHUB_TOKEN``, set up as ``openlab event`` does:
    the API URL of the runner, comments as ``github-actions[bot]``, a ledger from ``OPENLAB_LEDGER_URL``)."""
    from bot.config.settings import BotSettings, actions_defaults
    from bot.ingress.service import Bot

    token = os.environ.get("GITHUB_TOKEN") or None
    bot = Bot(BotSettings(**(actions_defaults() if token else {})), token=token)
    return attach_to_bot(bot)
