"""Structured JSON logs, keyed the same way across the bot and the runner.

Bind context once (``with log_context(delivery_id=..., repo=..., pr=..., sha=..., run_id=...)``) and every
record logged inside it carries those keys, so one ``grep run_id=...`` (or a log query) follows a run from
the webhook that asked for it to the Ray job that trained it.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

QUIET_LIBRARIES = ("httpx", "httpcore", "urllib3", "jax", "absl", "filelock", "asyncio", "ray", "wandb",
                   "uvicorn.access")
CONTEXT_KEYS = ("delivery_id", "event", "repo", "pr", "issue", "sha", "run_id", "step")
_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "openlab_log_context", default=None
)


@contextlib.contextmanager
def log_context(**fields: Any) -> Iterator[None]:
    """Add keys to every log record emitted inside this block (nesting merges, inner wins)."""
    token = _context.set({**(_context.get() or {}), **{k: v for k, v in fields.items() if v is not None}})
    try:
        yield
    finally:
        _context.reset(token)


def current_context() -> dict[str, Any]:
    return dict(_context.get() or {})


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            **(_context.get() or {}),
        }
        extra = getattr(record, "fields", None)
        if isinstance(extra, dict):
            out.update(extra)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


def setup_logging(level: str | None = None, fmt: str | None = None) -> None:
    """Configure the root logger once: JSON by default (OPENLAB_LOG_FORMAT=text for humans)."""
    level = (level or os.environ.get("OPENLAB_LOG_LEVEL") or "INFO").upper()
    fmt = fmt or os.environ.get("OPENLAB_LOG_FORMAT") or "json"
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter() if fmt == "json" else logging.Formatter("%(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in QUIET_LIBRARIES:  # one line per HTTP request or compile would drown the lab's own records
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


def log_event(logger: logging.Logger, msg: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log ``msg`` with structured ``fields`` beside the bound context."""
    logger.log(level, msg, extra={"fields": fields})


def ensure_logging() -> None:
    """Set up JSON logging unless the process already has handlers (a test runner, an embedding app)."""
    if not logging.getLogger().handlers:
        setup_logging()
