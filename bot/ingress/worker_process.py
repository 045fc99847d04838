"""Run the queue worker in its own process (the default for `openlab serve`).

The webhook process then only verifies, claims and acknowledges: the worker's GitHub calls, templates and plan
subprocesses never hold the ingress process's GIL, which keeps acknowledgement latency flat under load. Both
processes share the ledger (SQLite in WAL mode handles one writer at a time with a busy timeout; Postgres
natively); the worker polls it, so work queued by a previous process, or before a crash, is picked up too.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
from typing import Any

log = logging.getLogger("openlab.bot")


def _main(settings_json: str, token: str | None, parent: int) -> None:
    from bot.config.settings import BotSettings
    from bot.ingress.service import Bot

    os.nice(10)  # acknowledging webhooks fast matters more than applying them fast

    bot = Bot(BotSettings.model_validate_json(settings_json), token=token)
    from bot.runs.dispatch import attach_to_bot

    attach_to_bot(bot)  # DispatchRun actions are applied here, so the Ray dispatcher (issue 5) is plugged in here
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    bot.worker.start()
    while not stop.wait(0.05):
        if os.getppid() != parent:  # the server died (uvicorn re-raises SIGTERM, so no cleanup ran): stop too
            break
        bot.ledger.wakeup.set()  # the claims happen in another process: poll the ledger
    bot.worker.stop()


def start(settings: Any, token: str | None) -> multiprocessing.process.BaseProcess:
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=_main, args=(settings.model_dump_json(), token, os.getpid()), name="openlab-worker", daemon=True)
    proc.start()
    return proc
