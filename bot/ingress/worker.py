"""The queue worker: takes deliveries from the ledger in arrival order and applies their actions.

One worker thread serialises all effects, so two deliveries never race on the same sticky comment (cml#1144);
GitHub's write pacing (about one write per second) makes more writers pointless anyway.

Per delivery: parse -> handlers (gather, decide) -> store the action list -> apply each action, moving the
`actions_done` cursor after each. Transient failures (GitHub 5xx, rate limits, connection errors) keep the
delivery queued with exponential backoff; a delivery that still fails after MAX_ATTEMPTS, or whose payload is
malformed, is marked `failed` with its error (visible in the ledger and /metrics), never silently dropped.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable

from bot.actions import ACTIONS
from bot.executor import ActionError, Executor
from bot.github.client import GitHubError
from bot.github.events import BadPayload, Ignored, parse_event
from bot.handlers import Env, handle
from bot.ingress import infra
from bot.ledger import Delivery, Ledger
from runner.logs import log_context, log_event

log = logging.getLogger("openlab.bot")


def _where(raw: bytes | str) -> dict[str, object]:
    """repo, PR/issue and SHA of a delivery, for the log context (best effort: the payload is not yet validated)."""
    try:
        p = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(p, dict):
        return {}
    pr = p.get("pull_request") if isinstance(p.get("pull_request"), dict) else None
    issue = p.get("issue") if isinstance(p.get("issue"), dict) else None
    return {
        "repo": (p.get("repository") or {}).get("full_name") if isinstance(p.get("repository"), dict) else None,
        "pr": pr.get("number") if pr else None,
        "issue": issue.get("number") if issue else None,
        "sha": ((pr.get("head") or {}).get("sha") if pr else None) or p.get("after"),
    }
MAX_ATTEMPTS = 8


class Worker:
    def __init__(self, ledger: Ledger, env_for: Callable[[int | None], tuple[Env, Executor]],
                 on_outcome: Callable[[str], None] | None = None, retry_base_s: float = 2.0) -> None:
        self.ledger = ledger
        self.env_for = env_for
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._on_outcome = on_outcome or (lambda outcome: None)
        self.retry_base_s = retry_base_s

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="openlab-worker", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self.ledger.wakeup.set()
        if self._thread:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                delivery = self.ledger.next_queued()
            except Exception:  # the database went away for a moment: retry, never die
                log.exception("ledger read failed")
                self._stop.wait(1.0)
                continue
            if delivery is None:
                self.ledger.wakeup.wait(0.5)
                self.ledger.wakeup.clear()
                continue
            try:
                self.process(delivery)
            except Exception:  # recording the outcome failed too (the ledger's disk full): stay alive, retry later
                log.exception("delivery %s: could not record its outcome (error id %s)", delivery.guid,
                              infra.new_error_id())
                self._stop.wait(1.0)

    def drain(self) -> int:
        """Process everything queued now (Actions mode and tests); returns how many deliveries ran."""
        n = 0
        while (delivery := self.ledger.next_queued()) is not None:
            self.process(delivery)
            n += 1
        return n

    def process(self, d: Delivery) -> None:
        with log_context(delivery_id=d.guid, event=d.event, **_where(d.payload)):
            self._process_logged(d)

    def _process_logged(self, d: Delivery) -> None:
        try:
            outcome = self._process(d)
        except (GitHubError, OSError) as err:
            attempts = self.ledger.bump_attempt(d.guid, str(err), self.retry_base_s * 2 ** min(d.attempts, 8))
            final = attempts >= MAX_ATTEMPTS
            if final:
                self.ledger.finish(d.guid, "failed", str(err))
                outcome = "failed"
            else:
                outcome = "retry"
            log.warning("delivery %s: %s (attempt %d)", d.guid, err, attempts)
            if infra.is_infrastructure(err) and (attempts == 1 or final):  # the bot's own host, not GitHub
                self._infra_note(d, err, retrying=not final)
        except Exception as err:  # a bug: keep the delivery for inspection, do not loop on it
            error_id = self._infra_note(d, err, retrying=False)
            self.ledger.finish(d.guid, "failed", f"{type(err).__name__}: {err} (error id {error_id})")
            outcome = "failed"
        log_event(log, "delivery processed", outcome=outcome)
        self._on_outcome(outcome)

    def _infra_note(self, d: Delivery, err: Exception, *, retrying: bool) -> str:
        """Post the short note with an error id on the delivery's thread (details logged under the id)."""
        try:
            payload = json.loads(d.payload)
            installation = (payload.get("installation") or {}).get("id") if isinstance(payload, dict) else None
            executor = self.env_for(installation)[1]
        except Exception:  # noqa: BLE001 - no thread to tell: the log line still has everything
            payload, executor = None, None
        return infra.report(err, payload, executor, retrying=retrying, delivery_id=d.guid)

    def _process(self, d: Delivery) -> str:
        payload = json.loads(d.payload)
        installation = (payload.get("installation") or {}).get("id") if isinstance(payload, dict) else None
        actions = d.actions
        if actions is None:
            try:
                event = parse_event(d.event, payload)
            except BadPayload as err:
                self.ledger.finish(d.guid, "failed", str(err))
                return "failed"
            if isinstance(event, Ignored):
                self.ledger.finish(d.guid, "ignored", event.reason)
                return "ignored"
            env, executor = self.env_for(installation)
            computed = handle(event, env)
            if not computed:  # most events (plain comments) need nothing: one write, not two
                self.ledger.finish(d.guid, "done")
                return "done"
            actions = [a.model_dump() for a in computed]
            self.ledger.set_actions(d.guid, actions)
            done = 0
        else:
            env, executor = self.env_for(installation)
            done = d.actions_done
        parsed = ACTIONS.validate_python(actions)
        errors = []
        for i in range(done, len(parsed)):
            try:
                executor.apply(parsed[i])
            except (ActionError, GitHubError) as err:
                if isinstance(err, GitHubError) and (err.status == 0 or err.status >= 429 or err.status == 403):
                    raise
                errors.append(f"{parsed[i].type}: {err}")  # 4xx on one action: report, go on with the rest
            self.ledger.action_done(d.guid, i)
        self.ledger.finish(d.guid, "done", "; ".join(errors) or None)
        return "done"
