"""Recovery after downtime: redeliver the webhooks that failed while the server was away.

GitHub does not retry a failed delivery by itself; it keeps every attempt in the App's delivery log for three
days (``GET /app/hook/deliveries``, newest first, cursor-paged through the ``Link`` header) and redelivers one on
request (``POST /app/hook/deliveries/{id}/attempts``). Both take the App's JWT, not an installation token.

A pass reads the failed attempts of the look-back window (``status=failure``) and asks for a redelivery of each
delivery (``guid``) that
- is an event and action the bot handles (others would only be ignored again),
- failed in a way a retry can fix: no connection (``status_code`` 0), a timeout (408), 429 or a 5xx; a 4xx such
  as a bad signature or a bad body fails the same way again,
- is not claimed in the ledger's inbox (a delivery GitHub saw fail, e.g. on a timeout, may still have been
  claimed; a later successful redelivery is claimed too),
- has fewer than ``recovery_max_attempts`` failed attempts in the log (the bound: a delivery that keeps failing
  is left alone and logged),
- was not asked for by this process in the last interval (GitHub redelivers asynchronously).
Exactly-once processing does not rest on this filter: the ledger claims each ``guid`` once, so a redelivery that
races a late original answers ``duplicate``.

The decision (:func:`select_redeliveries`) is pure; :class:`Recovery` does the reads and requests, once at start
(after ``recovery_start_delay_s``, so the server listens when GitHub calls back) and every
``recovery_interval_s``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel, ConfigDict, ValidationError
from sqlalchemy import select

from bot.config.settings import BotSettings
from bot.github.auth import AppAuth
from bot.github.client import GitHubClient, GitHubError
from bot.github.events import HANDLED_EVENTS, handles
from bot.ledger import Ledger
from bot.ledger_tables import inbox
from runner.logs import log_event

log = logging.getLogger("openlab.bot.recovery")
MAX_PAGES = 50  # 5,000 failed attempts in the window: more means something else is wrong; the next pass goes on
RETRYABLE = {0, 408, 429}


class HookDelivery(BaseModel):
    """One attempt in the App's delivery log (the fields recovery reads of GitHub's ``hook-delivery-item``)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    id: int
    guid: str
    delivered_at: datetime
    redelivery: bool = False
    status_code: int = 0
    event: str
    action: str | None = None
    installation_id: int | None = None


@dataclass
class PassReport:
    redelivered: list[str] = field(default_factory=list)
    gave_up: list[str] = field(default_factory=list)
    claimed: int = 0
    error: str | None = None


def retryable(status_code: int) -> bool:
    return status_code in RETRYABLE or status_code >= 500


def select_redeliveries(attempts: Iterable[HookDelivery], claimed: set[str], pending: set[str],
                        max_attempts: int) -> tuple[list[HookDelivery], list[str]]:
    """The attempt to redeliver per guid (its newest), and the guids given up on. Pure."""
    attempts = list(attempts)
    tries = Counter(a.guid for a in attempts)
    newest: dict[str, HookDelivery] = {}
    for a in attempts:
        if a.guid not in newest or a.id > newest[a.guid].id:
            newest[a.guid] = a
    todo, gave_up = [], []
    for guid, a in sorted(newest.items(), key=lambda kv: kv[1].id):
        if guid in claimed or guid in pending or not retryable(a.status_code):
            continue
        if a.event not in HANDLED_EVENTS or not handles(a.event, a.action):
            continue
        if tries[guid] >= max_attempts:
            gave_up.append(guid)
            continue
        todo.append(a)
    return todo, gave_up


class Recovery:
    def __init__(self, app_client: GitHubClient, ledger: Ledger, *, interval_s: float, lookback_s: float,
                 max_attempts: int, start_delay_s: float = 5.0, clock: Callable[[], float] = time.time,
                 on_outcome: Callable[[str, int], None] | None = None) -> None:
        self.gh, self.ledger = app_client, ledger
        self.interval_s, self.lookback_s, self.max_attempts = interval_s, lookback_s, max_attempts
        self.start_delay_s, self.clock = start_delay_s, clock
        self._asked: dict[str, float] = {}  # guid -> when this process asked GitHub to redeliver it
        self._given_up: set[str] = set()  # logged once, not on every pass for the three days GitHub keeps them
        self._on_outcome = on_outcome or (lambda outcome, n: None)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.passes = 0

    # -- reads -------------------------------------------------------------------------------------------------
    def failed_attempts(self) -> list[HookDelivery]:
        """Failed attempts of the look-back window, newest first (the log's order)."""
        since = self.clock() - self.lookback_s
        out: list[HookDelivery] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page, cursor = self.gh.hook_deliveries(cursor=cursor, status="failure")
            for item in page:
                try:
                    a = HookDelivery.model_validate(item)
                except ValidationError as err:
                    log_event(log, "delivery log entry skipped", level=logging.WARNING, error=str(err)[:200])
                    continue
                if a.delivered_at.timestamp() < since:
                    return out
                out.append(a)
            if not cursor or not page:
                break
        return out

    def claimed(self, guids: set[str]) -> set[str]:
        found: set[str] = set()
        ordered = sorted(guids)
        for i in range(0, len(ordered), 500):
            with self.ledger.inbox_engine.connect() as conn:
                found |= set(conn.execute(select(inbox.c.guid).where(inbox.c.guid.in_(ordered[i:i + 500])))
                             .scalars())
        return found

    # -- one pass ----------------------------------------------------------------------------------------------
    def run_once(self) -> PassReport:
        report = PassReport()
        now = self.clock()
        self._asked = {g: t for g, t in self._asked.items() if now - t < max(self.interval_s, 60.0)}
        try:
            attempts = self.failed_attempts()
            claimed = self.claimed({a.guid for a in attempts})
            report.claimed = len(claimed)
            todo, report.gave_up = select_redeliveries(attempts, claimed, set(self._asked), self.max_attempts)
            for a in todo:
                self.gh.redeliver(a.id)
                self._asked[a.guid] = now
                report.redelivered.append(a.guid)
                log_event(log, "redelivery requested", delivery=a.guid, event=a.event, action=a.action,
                          status_code=a.status_code)
        except GitHubError as err:
            report.error = str(err)
            log_event(log, "recovery pass failed; the next pass retries", level=logging.WARNING, error=str(err))
        new_give_ups = [g for g in report.gave_up if g not in self._given_up]
        for guid in new_give_ups:
            log_event(log, "delivery left failed: attempt bound reached", level=logging.WARNING, delivery=guid,
                      max_attempts=self.max_attempts)
        self._given_up.update(new_give_ups)
        for outcome, n in (("redelivered", len(report.redelivered)), ("gave_up", len(new_give_ups)),
                           ("error", int(report.error is not None))):
            if n:
                self._on_outcome(outcome, n)
        self.passes += 1
        return report

    # -- the loop ----------------------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="openlab-recovery", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)  # a daemon thread: a request in flight may finish after the server is gone

    def _loop(self) -> None:
        if self._stop.wait(self.start_delay_s):
            return
        while True:
            try:
                self.run_once()
            except Exception:  # a bad pass must not end recovery for the life of the server
                log.exception("recovery pass crashed")
            if self._stop.wait(self.interval_s):
                return


def recovery_for(settings: BotSettings, auth: AppAuth | None, ledger: Ledger,
                 on_outcome: Callable[[str, int], None] | None = None) -> Recovery | None:
    """The recovery loop of an App-mode bot (None with a fixed token, or with ``recovery_interval_s`` 0)."""
    if auth is None or settings.recovery_interval_s <= 0:
        return None
    # Few, short retries: a pass that cannot reach GitHub ends and the next pass tries again, and a server that
    # shuts down is not held by a backoff sleep.
    client = GitHubClient(settings.github_api_url, auth.app_jwt, write_interval_s=settings.write_interval_s,
                          max_retries=1, backoff_s=0.5, max_wait_s=30.0, timeout_s=10.0)
    return Recovery(client, ledger, interval_s=settings.recovery_interval_s, lookback_s=settings.recovery_lookback_s,
                    max_attempts=settings.recovery_max_attempts, start_delay_s=settings.recovery_start_delay_s,
                    on_outcome=on_outcome)
