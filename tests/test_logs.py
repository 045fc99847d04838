from __future__ import annotations

import json
import logging

from runner.logs import JsonFormatter, log_context, log_event


def test_context_keys_reach_every_record() -> None:
    logger = logging.getLogger("openlab.test")
    records: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(JsonFormatter().format(record))

    handler = Capture()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        with log_context(delivery_id="d-1", repo="lab/x"), log_context(run_id="r-9", pr=3):
            log_event(logger, "dispatched", attempt=1)
        log_event(logger, "outside")
    finally:
        logger.removeHandler(handler)
    first, second = (json.loads(r) for r in records)
    assert first["delivery_id"] == "d-1" and first["repo"] == "lab/x" and first["run_id"] == "r-9"
    assert first["pr"] == 3 and first["attempt"] == 1 and first["msg"] == "dispatched"
    assert "run_id" not in second


def test_a_delivery_is_logged_with_its_keys(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The worker binds delivery id, event, repo, PR and SHA around everything a delivery does."""
    from bot.ingress.worker import Worker
    from bot.ledger import Ledger

    ledger = Ledger(f"sqlite:///{tmp_path}/l.sqlite3")
    payload = {"action": "labeled", "repository": {"full_name": "lab/x"},
               "pull_request": {"number": 7, "head": {"sha": "a" * 40}}}
    assert ledger.claim("guid-1", "unknown_event", "labeled", json.dumps(payload).encode())
    worker = Worker(ledger, lambda i: (None, None))  # type: ignore[arg-type,return-value]
    seen: list[dict] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(json.loads(JsonFormatter().format(record)))

    handler, bot_log = Capture(), logging.getLogger("openlab.bot")
    bot_log.addHandler(handler)
    bot_log.setLevel(logging.INFO)
    try:
        worker.drain()
    finally:
        bot_log.removeHandler(handler)
        bot_log.setLevel(logging.NOTSET)
    done = [r for r in seen if r["msg"] == "delivery processed"]
    assert done and done[0]["delivery_id"] == "guid-1" and done[0]["repo"] == "lab/x"
    assert done[0]["pr"] == 7 and done[0]["sha"] == "a" * 40 and done[0]["event"] == "unknown_event"
