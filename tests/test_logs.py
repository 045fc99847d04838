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
