"""Infrastructure failures: a short public note with an error id on the thread, the details in the logs only.

When handling a delivery fails for a reason that is not the contributor's (the bot's disk is full, a file-size
limit, an unexpected exception in a handler), the thread gets one sticky comment saying what kind of problem it
was, whether the bot will retry, and an error id. The traceback, the exception text and any host path go to the
log line carrying the same id, where an operator finds them; none of it is posted (an exception message often
holds paths such as ``/home/openlab/…`` or ``/tmp/openlab-checkout-…``, which are nobody's business).
"""

from __future__ import annotations

import errno
import logging
import secrets
from typing import Any

from bot.actions import UpsertComment
from bot.executor import Executor

log = logging.getLogger("openlab.bot")

KIND = "infra"

_OS_PROBLEMS = {
    errno.ENOSPC: "the bot's disk is full",
    errno.EDQUOT: "the bot's disk quota is exhausted",
    errno.EFBIG: "a file-size limit of the bot's host was reached",
    errno.EROFS: "the bot's storage is read-only",
    errno.EIO: "an I/O error on the bot's storage",
    errno.ENOMEM: "the bot's host is out of memory",
}


def new_error_id() -> str:
    """A short id to quote between a public note and the log line with the details."""
    return "oe-" + secrets.token_hex(5)


def describe(err: BaseException) -> str:
    """What kind of problem `err` is, in words safe to post (never the exception's own text)."""
    if isinstance(err, MemoryError):
        return "the bot's host is out of memory"
    if isinstance(err, OSError) and err.errno in _OS_PROBLEMS:
        return _OS_PROBLEMS[err.errno]
    if isinstance(err, OSError):
        return "a storage or system error on the bot's host"
    return "an unexpected error in the bot"


def is_infrastructure(err: BaseException) -> bool:
    """An OS-level failure of the bot's own host (as opposed to GitHub or the network being unavailable)."""
    return isinstance(err, MemoryError) or (isinstance(err, OSError) and err.errno in _OS_PROBLEMS)


def public_note(err: BaseException, error_id: str, *, retrying: bool) -> str:
    then = ("The bot will retry this delivery by itself." if retrying else
            "The bot has stopped retrying; an operator can replay the delivery once it is fixed.")
    return (f"⚠️ **openlab could not handle this event**: {describe(err)}. This is a problem with the lab's "
            f"infrastructure, not with this pull request or issue. {then}\n\n"
            f"Error id `{error_id}` (operators: the details are in the bot's logs under this id).")


def thread_of(payload: dict[str, Any]) -> tuple[str, int] | None:
    """(repo, issue/PR number) a delivery is about, if any (the payload is already depth-checked JSON)."""
    repo = payload.get("repository")
    full_name = repo.get("full_name") if isinstance(repo, dict) else None
    for key in ("pull_request", "issue"):
        node = payload.get(key)
        if isinstance(node, dict) and isinstance(node.get("number"), int) and isinstance(full_name, str):
            return full_name, node["number"]
    return None


def report(err: BaseException, payload: object, executor: Executor | None, *, retrying: bool,
           **context: object) -> str:
    """Log `err` in full under a new error id and post the short note on the delivery's thread; returns the id.

    Posting is best effort: when the failure also stops the note (GitHub down, the ledger on the full disk), the
    log line still has everything.
    """
    error_id = new_error_id()
    log.error("infrastructure failure %s: %s: %s", error_id, type(err).__name__, err, exc_info=err,
              extra={"fields": {"error_id": error_id, **context}})
    where = thread_of(payload) if isinstance(payload, dict) else None
    if where is None or executor is None:
        return error_id
    repo, number = where
    try:
        executor.apply(UpsertComment(repo=repo, issue_number=number, kind=KIND, key=str(number),
                                     body=public_note(err, error_id, retrying=retrying)))
    except Exception:  # noqa: BLE001 - the note is a courtesy; the log above is the record
        log.warning("could not post the note for %s", error_id, exc_info=True)
    return error_id
