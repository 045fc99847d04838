"""Wiring: settings -> ledger, GitHub clients per installation, planner, executor, worker, metrics.

`Bot` is what both front doors share: `openlab serve` runs it behind FastAPI with a worker thread;
`openlab event` feeds it one payload and drains the queue in-process.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge

from bot.config.settings import BotSettings
from bot.executor import Dispatcher, Executor
from bot.github.auth import AppAuth
from bot.github.client import GitHubClient
from bot.handlers import Env
from bot.ingress.recovery import recovery_for
from bot.ingress.worker import Worker
from bot.ledger import Ledger, LedgerView
from bot.plans.sandbox import PlanOutcome, materialise, run_plan


class Metrics:
    def __init__(self, ledger: Ledger) -> None:
        self.registry = CollectorRegistry()
        self.deliveries = Counter("openlab_deliveries_total", "Webhook deliveries by event and outcome",
                                  ["event", "outcome"], registry=self.registry)
        self.processed = Counter("openlab_processed_total", "Deliveries processed by the worker, by outcome",
                                 ["outcome"], registry=self.registry)
        self.github_limited = Counter("openlab_github_rate_limited_total", "GitHub 403/429 rate-limit answers",
                                      ["status"], registry=self.registry)
        self.recovery = Counter("openlab_recovery_total", "Recovery after downtime: redeliveries requested, "
                                "deliveries given up (attempt bound), failed passes", ["outcome"],
                                registry=self.registry)
        depth = Gauge("openlab_queue_depth", "Deliveries waiting in the ledger queue", registry=self.registry)
        depth.set_function(lambda: float(ledger.queue_depth()))


class SandboxPlanner:
    """App mode: fetch the PR's experiment files at the head SHA and plan each in the plan sandbox.

    An experiment may read files beside it (a speedrun's ``config.yaml``), so every file of its directory comes
    along, within bounds (``MAX_SIBLINGS`` files of at most ``MAX_SIBLING_BYTES``; results are never needed).
    """

    MAX_SIBLINGS = 50
    MAX_SIBLING_BYTES = 256 * 1024

    def __init__(self, gh: GitHubClient, timeout_s: float, memory_mb: int) -> None:
        self.gh, self.timeout_s, self.memory_mb = gh, timeout_s, memory_mb

    def __call__(self, repo: str, sha: str, paths: list[str]) -> dict[str, PlanOutcome]:
        out: dict[str, PlanOutcome] = {}
        with tempfile.TemporaryDirectory(prefix="openlab-checkout-") as tmp:
            files = {p: self.gh.get_contents(repo, p, ref=sha) or "" for p in paths}
            for p in self._siblings(repo, sha, paths):
                files.setdefault(p, self.gh.get_contents(repo, p, ref=sha) or "")
            try:
                root = materialise(files, Path(tmp))
            except ValueError as err:
                return {p: PlanOutcome(p, error=str(err)) for p in paths}
            for p in paths:
                out[p] = run_plan(root, p, timeout_s=self.timeout_s, memory_mb=self.memory_mb)
        return out


    def _siblings(self, repo: str, sha: str, paths: list[str]) -> list[str]:
        out: list[str] = []
        for folder in sorted({p.rsplit("/", 1)[0] for p in paths if "/" in p}):
            entries = [e for e in self.gh.list_dir(repo, folder, ref=sha)
                       if e.get("type") == "file" and int(e.get("size") or 0) <= self.MAX_SIBLING_BYTES
                       and not str(e.get("name", "")).endswith("results.json")]
            out += [str(e["path"]) for e in entries[: self.MAX_SIBLINGS]]
        return out


class Bot:
    def __init__(self, settings: BotSettings, *, token: str | None = None, dispatcher: Dispatcher | None = None,
                 planner_factory: Callable[[GitHubClient], Callable[..., dict[str, PlanOutcome]] | None] | None = None,
                 ) -> None:
        self.settings = settings
        self.ledger = Ledger(settings.ledger_url)
        self.metrics = Metrics(self.ledger)
        self.dispatcher = dispatcher
        self._token = token
        self._auth = None if token else AppAuth.from_files(settings.app_id, settings.private_key_path,
                                                            settings.github_api_url)
        self._planner_factory = planner_factory or (
            lambda gh: SandboxPlanner(gh, settings.plan_timeout_s, settings.plan_memory_mb))
        self._clients: dict[int | None, tuple[Env, Executor]] = {}
        self._lock = threading.Lock()
        self.worker = Worker(self.ledger, self.env_for, on_outcome=lambda o: self.metrics.processed.labels(o).inc())
        self.recovery = recovery_for(settings, self._auth, self.ledger,  # started with the server (app.py)
                                     on_outcome=lambda o, n: self.metrics.recovery.labels(o).inc(n))

    def env_for(self, installation_id: int | None) -> tuple[Env, Executor]:
        with self._lock:
            if installation_id not in self._clients:
                self._clients[installation_id] = self._build(installation_id)
            return self._clients[installation_id]

    def _build(self, installation_id: int | None) -> tuple[Env, Executor]:
        if self._token is not None:
            token = self._token
            get_token: Callable[[], str] = lambda: token  # noqa: E731
        else:
            auth, inst = self._auth, installation_id
            if auth is None or inst is None:
                raise ValueError("App mode needs the delivery's installation id")
            get_token = lambda: auth.installation_token(inst)  # noqa: E731
        gh = GitHubClient(self.settings.github_api_url, get_token, write_interval_s=self.settings.write_interval_s,
                          on_limited=lambda status: self.metrics.github_limited.labels(str(status)).inc())
        env = Env(gh=gh, view=LedgerView(self.ledger), bot_login=self.settings.bot_login,
                  planner=self._planner_factory(gh))
        return env, Executor(gh, self.ledger, self.settings.bot_login, self.dispatcher)
