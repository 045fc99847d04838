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
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.actions import UpsertComment
from bot.github import GitHubClient, GitHubError
from bot.jobs import BackendUnavailable, JobBackend, JobInfo, JobRejected, JobSpec, JobState
from bot.ledger import Ledger
from bot.linking import body_preregistration
from bot.publish import Publisher
from bot.quotas import quota_problem, quotas_of
from bot.repo_config import CONFIG_PATH, RepoConfig, parse_repo_config
from bot.run_report import render_run_comment
from bot.run_state import RunReport, RunStates
from runner.errors import OpenlabError
from runner.logs import log_context, log_event

log = logging.getLogger("openlab.bot.dispatch")
BACKOFF_START_S = 15.0
BACKOFF_MAX_S = 600.0


def backoff(tries: int) -> float:
    return min(BACKOFF_MAX_S, BACKOFF_START_S * 2 ** max(0, tries - 1))


@dataclass
class RunServices:
    """What dispatching and reconciling need; built once per process (server, Actions job, CLI)."""

    gh_for: Callable[[int | None], GitHubClient]  # installation id -> client (one client in Actions mode)
    ledger: Ledger
    backend: JobBackend
    bot_login: str
    states: RunStates = field(init=False)
    storage_prefix: str | None = None  # overrides the repo config's storage_prefix (operator setting)
    source: str | None = None  # where the executor fetches the SHA from; None: the base repo's clone URL
    wandb_entity: str | None = None
    signing_key: bytes | None = None
    leaderboard_results: str = "experiments/**/results.json"
    clock: Any = time.time

    def __post_init__(self) -> None:
        self.states = RunStates(self.ledger.engine)

    def gh(self, run: dict[str, Any]) -> GitHubClient:
        return self.gh_for(run.get("installation_id"))

    def publisher(self, run: dict[str, Any]) -> Publisher:
        return Publisher(self.gh(run), self.ledger, self.bot_login)

    @classmethod
    def from_env(cls, gh_for: Callable[[int | None], GitHubClient], ledger: Ledger, backend: JobBackend,
                 bot_login: str) -> RunServices:
        key = os.environ.get("OPENLAB_SIGNING_KEY") or None
        key_file = os.environ.get("OPENLAB_SIGNING_KEY_FILE")
        if key is None and key_file:
            key = Path(key_file).read_text()
        return cls(
            gh_for=gh_for, ledger=ledger, backend=backend, bot_login=bot_login,
            storage_prefix=os.environ.get("OPENLAB_STORAGE_PREFIX") or None,
            source=os.environ.get("OPENLAB_SOURCE") or None,
            wandb_entity=os.environ.get("WANDB_ENTITY") or None,
            signing_key=key.encode() if key else None,
            leaderboard_results=os.environ.get("OPENLAB_LEADERBOARD_RESULTS", "experiments/**/results.json"),
        )

    def repo_config(self, run: dict[str, Any]) -> RepoConfig:
        try:
            return parse_repo_config(self.gh(run).get_contents(run["repo"], CONFIG_PATH))
        except OpenlabError:
            return RepoConfig()  # the bad file is reported on its own thread by the bot core

    def prefix(self, config: RepoConfig) -> str:
        prefix = self.storage_prefix or config.storage_prefix
        if "://" not in prefix or prefix.startswith("file://"):
            # Ray jobs run in their own working dir: a relative local prefix must be made absolute here.
            prefix = str(Path(prefix.removeprefix("file://")).resolve())
        return prefix

    def upsert_comment(self, run: dict[str, Any], body: str) -> None:
        from bot.executor import Executor  # the bot core's one comment-upsert implementation

        Executor(self.gh(run), self.ledger, self.bot_login).apply(
            UpsertComment(repo=run["repo"], issue_number=run["pr"], kind="run", key=run["run_id"], body=body))


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
        """The comment that asked for this run (for the 🚀): the requester's latest `/run` or `/rerun` on the PR.
        None when the run came from the approval label."""
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
            from bot.reconcile import publish_outcome

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
        from bot.reproductions import budget_problem  # a `/verify` plans N seeds: N x the single run's FLOPs

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
        if planned and planned.get("tokens"):  # the bot's own count (bot.budget); the trainer refuses more
            env["OPENLAB_APPROVED_TOKENS"] = str(int(planned["tokens"]))
        from bot.reproductions import job_env

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
        from bot.reconcile import publish_outcome

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


def execution_page_url(site_url: str | None, run_id: str) -> str | None:
    """Where the site publishes this run's execution page (`openlab reports build --prefix`)."""
    from leaderboard.execution_pages import page_name

    return f"{site_url.rstrip('/')}/executions/{page_name(run_id)}" if site_url else None


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


def attach_to_bot(bot: Any, backend: JobBackend | None = None) -> RunServices:
    """Plug the Ray dispatcher into a bot core ``Bot`` (before its first delivery) and return the services
    the reconciler shares with it: one ledger, one GitHub client per installation."""
    from bot.jobs import RayJobs

    services = RunServices.from_env(lambda inst: bot.env_for(inst)[0].gh, bot.ledger, backend or RayJobs(),
                                    bot.settings.bot_login)
    bot.dispatcher = RayDispatcher(services)
    bot._clients.clear()  # executors built before this point hold the record-only dispatcher
    return services


def services_from_env() -> RunServices:
    """App mode (``OPENLAB_APP_ID`` + key) or Actions mode (``GITHUB_TOKEN``, set up as ``openlab event`` does:
    the API URL of the runner, comments as ``github-actions[bot]``, a ledger from ``OPENLAB_LEDGER_URL``)."""
    from bot.service import Bot
    from bot.settings import BotSettings

    token = os.environ.get("GITHUB_TOKEN") or None
    overrides: dict[str, Any] = {}
    if token:
        if "OPENLAB_GITHUB_API_URL" not in os.environ and os.environ.get("GITHUB_API_URL"):
            overrides["github_api_url"] = os.environ["GITHUB_API_URL"]
        if "OPENLAB_BOT_LOGIN" not in os.environ:
            overrides["bot_login"] = "github-actions[bot]"
        if not os.environ.get("OPENLAB_LEDGER_URL"):
            overrides["ledger_url"] = "sqlite:///.openlab-ledger.sqlite3"
    bot = Bot(BotSettings(**overrides), token=token)
    return attach_to_bot(bot)
