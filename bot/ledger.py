"""The bot's durable state (SQLAlchemy Core; SQLite by default, any SQLAlchemy URL such as Postgres works).

The tables are in :mod:`bot.ledger_tables`; this module is every read and write of them (:class:`Ledger`) and the
read-only view the pure handlers get (:class:`LedgerView`).

A delivery row is inserted once (unique GUID) after its signature verifies: that insert is both the claim and the
enqueue. The worker stores the actions it computed and an `actions_done` cursor, so a process killed mid-delivery
resumes at the next action; every action is idempotent, so the action in flight at the crash is safe to repeat.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Table,
    create_engine,
    event,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from bot.ledger_tables import (
    ACTIVE_RUN_STATES,
    approvals,
    comments,
    deliveries,
    inbox,
    inbox_metadata,
    metadata,
    plans,
    pr_timeline,
    preregistrations,
    runs,
)
from bot.runs.approval import HeadTimeline, timeline_mark
from runner.errors import ConfigError


@dataclass(frozen=True)
class Delivery:
    seq: int
    guid: str
    event: str
    payload: bytes
    attempts: int
    actions: list[dict[str, Any]] | None
    actions_done: int


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    # WAL + synchronous=NORMAL: a committed claim survives a process crash (what restarts need) at a fraction
    # of the fsync cost; a power loss may drop the last commits, which GitHub's redelivery covers.
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=5000")
    cur.close()


def _inbox_url(url: str) -> str:
    """sqlite:///x/ledger.sqlite3 -> sqlite:///x/ledger.inbox.sqlite3 (the claims file next to the ledger)."""
    head, dot, ext = url.rpartition(".")
    return f"{head}.inbox.{ext}" if dot and "/" not in ext else f"{url}.inbox"


class Ledger:
    def __init__(self, url: str) -> None:
        kwargs: dict[str, Any] = {}
        if url.startswith("sqlite"):
            kwargs["connect_args"] = {"check_same_thread": False}
        try:
            self.engine: Engine = create_engine(url, **kwargs)
        except ModuleNotFoundError as err:  # the Postgres driver is the optional extra
            raise ConfigError(f"OPENLAB_LEDGER_URL needs the {err.name} driver: pip install 'openlab[postgres]'") from None
        if url.startswith("sqlite"):
            event.listen(self.engine, "connect", _sqlite_pragmas)
        metadata.create_all(self.engine)
        self.inbox_engine = self.engine
        if url.startswith("sqlite") and ":memory:" not in url and url.count("/") >= 3:
            self.inbox_engine = create_engine(_inbox_url(url), **kwargs)
            event.listen(self.inbox_engine, "connect", _sqlite_pragmas)
        inbox_metadata.create_all(self.inbox_engine)
        self.wakeup = threading.Event()

    # -- queue -----------------------------------------------------------------------------------------------
    def claim(self, guid: str, event_name: str, action: str | None, payload: bytes) -> bool:
        """Insert the delivery into the inbox; False if this GUID was claimed before (a redelivery)."""
        try:
            with self.inbox_engine.begin() as conn:
                conn.execute(insert(inbox).values(guid=guid, event=event_name, action=action, payload=payload,
                                                  received_at=time.time()))
        except IntegrityError:
            return False
        self.wakeup.set()
        return True

    def _high_water(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.coalesce(func.max(deliveries.c.seq), 0))).scalar_one())

    def _sync(self) -> None:
        """Register inbox rows the worker has not seen yet as queued deliveries (idempotent; worker only)."""
        hwm = self._high_water()
        with self.inbox_engine.connect() as conn:
            rows = conn.execute(select(inbox.c.seq, inbox.c.guid, inbox.c.event, inbox.c.action, inbox.c.received_at)
                                .where(inbox.c.seq > hwm).order_by(inbox.c.seq).limit(500)).mappings().all()
        if rows:
            with self.engine.begin() as conn:
                conn.execute(insert(deliveries), [dict(r, status="queued", attempts=0, actions_done=0,
                                                       not_before=0.0) for r in rows])
                marks = self._timeline_marks([r for r in rows if r["event"] in ("pull_request", "issue_comment")])
                if marks:
                    conn.execute(insert(pr_timeline), marks)

    def _timeline_marks(self, rows: list[Any]) -> list[dict[str, Any]]:
        if not rows:
            return []
        with self.inbox_engine.connect() as conn:
            payloads = dict(conn.execute(select(inbox.c.seq, inbox.c.payload)
                                         .where(inbox.c.seq.in_([r["seq"] for r in rows]))).all())
        marks = []
        for r in rows:
            mark = timeline_mark(r["event"], payloads.get(r["seq"], b""))
            if mark is not None:
                marks.append({"sha": None, "comment_id": None, **mark, "seq": float(r["seq"]),
                              "received_at": r["received_at"]})
        return marks

    def next_queued(self) -> Delivery | None:
        self._sync()
        with self.engine.connect() as conn:
            row = conn.execute(
                select(deliveries).where((deliveries.c.status == "queued") & (deliveries.c.not_before <= time.time()))
                .order_by(deliveries.c.seq).limit(1)
            ).mappings().first()
        if row is None:
            return None
        with self.inbox_engine.connect() as conn:
            payload = conn.execute(select(inbox.c.payload).where(inbox.c.guid == row["guid"])).scalar_one()
        return Delivery(
            seq=row["seq"], guid=row["guid"], event=row["event"], payload=payload, attempts=row["attempts"],
            actions=json.loads(row["actions"]) if row["actions"] else None, actions_done=row["actions_done"],
        )

    def queue_depth(self) -> int:
        """Claimed but not yet finished deliveries (reads only: safe from the webhook process)."""
        hwm = self._high_water()
        with self.inbox_engine.connect() as conn:
            unseen = conn.execute(select(func.count()).select_from(inbox).where(inbox.c.seq > hwm)).scalar_one()
        with self.engine.connect() as conn:
            queued = conn.execute(
                select(func.count()).select_from(deliveries).where(deliveries.c.status == "queued")).scalar_one()
        return int(unseen) + int(queued)

    def set_actions(self, guid: str, actions: list[dict[str, Any]]) -> None:
        self._update_delivery(guid, actions=json.dumps(actions), actions_done=0)

    def action_done(self, guid: str, index: int) -> None:
        self._update_delivery(guid, actions_done=index + 1)

    def bump_attempt(self, guid: str, error: str, retry_in_s: float) -> int:
        """Count a failed attempt and keep the delivery queued, not before `retry_in_s` from now."""
        with self.engine.begin() as conn:
            conn.execute(update(deliveries).where(deliveries.c.guid == guid).values(
                attempts=deliveries.c.attempts + 1, error=error[:2000], not_before=time.time() + retry_in_s))
            return int(conn.execute(select(deliveries.c.attempts).where(deliveries.c.guid == guid)).scalar_one())

    def finish(self, guid: str, status: str, error: str | None = None) -> None:
        self._update_delivery(guid, status=status, error=error, done_at=time.time())

    def _update_delivery(self, guid: str, **values: Any) -> None:
        with self.engine.begin() as conn:
            conn.execute(update(deliveries).where(deliveries.c.guid == guid).values(**values))

    def delivery_status(self, guid: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(deliveries).where(deliveries.c.guid == guid)).mappings().first()
        if row is not None:
            return dict(row)
        with self.inbox_engine.connect() as conn:
            claimed = conn.execute(select(inbox.c.guid).where(inbox.c.guid == guid)).first()
        return {"guid": guid, "status": "queued", "attempts": 0, "error": None} if claimed else None

    def count_deliveries(self, status: str | None = None) -> int:
        if status is None:
            with self.inbox_engine.connect() as conn:
                return int(conn.execute(select(func.count()).select_from(inbox)).scalar_one())
        if status == "queued":
            return self.queue_depth()
        with self.engine.connect() as conn:
            return int(conn.execute(
                select(func.count()).select_from(deliveries).where(deliveries.c.status == status)).scalar_one())

    # -- records the handlers read (through LedgerView) and the executor writes ---------------------------------
    def upsert_preregistration(self, repo: str, issue_number: int, **values: Any) -> None:
        values = {**values, "fields": json.dumps(values["fields"]), "updated_at": time.time()}
        key = (preregistrations.c.repo == repo) & (preregistrations.c.issue_number == issue_number)
        with self.engine.begin() as conn:
            if conn.execute(select(preregistrations.c.repo).where(key)).first():
                conn.execute(update(preregistrations).where(key).values(**values))
            else:
                conn.execute(insert(preregistrations).values(repo=repo, issue_number=issue_number, **values))

    def preregistration(self, repo: str, issue_number: int) -> dict[str, Any] | None:
        key = (preregistrations.c.repo == repo) & (preregistrations.c.issue_number == issue_number)
        with self.engine.connect() as conn:
            row = conn.execute(select(preregistrations).where(key)).mappings().first()
        if row is None:
            return None
        return {**row, "fields": json.loads(row["fields"])}

    def record_plan(self, repo: str, sha: str, experiment: str, **values: Any) -> None:
        key = (plans.c.repo == repo) & (plans.c.sha == sha) & (plans.c.experiment == experiment)
        values = {**values, "updated_at": time.time()}
        with self.engine.begin() as conn:
            if conn.execute(select(plans.c.repo).where(key)).first():
                conn.execute(update(plans).where(key).values(**values))
            else:
                conn.execute(insert(plans).values(repo=repo, sha=sha, experiment=experiment, **values))

    def plan(self, repo: str, sha: str, experiment: str) -> dict[str, Any] | None:
        """The recorded plan of ``experiment`` at ``sha`` (None if it was never planned there)."""
        key = (plans.c.repo == repo) & (plans.c.sha == sha) & (plans.c.experiment == experiment)
        with self.engine.connect() as conn:
            row = conn.execute(select(plans).where(key)).mappings().first()
        return dict(row) if row else None

    def record_approval(self, repo: str, pr: int, sha: str, approved_by: str, via: str) -> None:
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(approvals).values(
                    repo=repo, pr=pr, sha=sha, approved_by=approved_by, via=via, created_at=time.time()))
        except IntegrityError:
            pass  # the same approval replayed: already recorded

    def revoke_approvals(self, repo: str, pr: int, keep_sha: str | None, reason: str) -> int:
        cond = (approvals.c.repo == repo) & (approvals.c.pr == pr) & approvals.c.revoked_at.is_(None)
        if keep_sha is not None:
            cond = cond & (approvals.c.sha != keep_sha)
        with self.engine.begin() as conn:
            return conn.execute(update(approvals).where(cond).values(
                revoked_at=time.time(), revoke_reason=reason)).rowcount

    def approvals(self, repo: str, pr: int, active_only: bool = True) -> list[dict[str, Any]]:
        cond = (approvals.c.repo == repo) & (approvals.c.pr == pr)
        if active_only:
            cond = cond & approvals.c.revoked_at.is_(None)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(select(approvals).where(cond).order_by(approvals.c.id)).mappings()]

    def record_observed_head(self, repo: str, pr: int, sha: str, comment_id: int) -> None:
        """The head the bot read while answering ``comment_id``: a later comment may approve it."""
        cond = ((pr_timeline.c.repo == repo) & (pr_timeline.c.pr == pr) & (pr_timeline.c.kind == "comment")
                & (pr_timeline.c.comment_id == comment_id))
        with self.engine.begin() as conn:
            seq = conn.execute(select(func.max(pr_timeline.c.seq)).where(cond)).scalar_one_or_none()
            if seq is None:
                return
            conn.execute(insert(pr_timeline).values(seq=seq + 0.5, repo=repo, pr=pr, kind="observed", sha=sha,
                                                    received_at=time.time()))

    def head_timeline(self, repo: str, pr: int, comment_id: int) -> HeadTimeline:
        """The heads of ``pr`` the bot learnt before and after ``comment_id`` arrived (inbox order)."""
        cond = (pr_timeline.c.repo == repo) & (pr_timeline.c.pr == pr)
        with self.engine.connect() as conn:
            rows = conn.execute(select(pr_timeline).where(cond).order_by(pr_timeline.c.seq, pr_timeline.c.id)
                                ).mappings().all()
        at = next((r for r in rows if r["kind"] == "comment" and r["comment_id"] == comment_id), None)
        if at is None:
            return HeadTimeline(found=False, before=None, after=(), received_at=None)
        heads = [r for r in rows if r["kind"] != "comment"]
        before = [r["sha"] for r in heads if r["seq"] < at["seq"]]
        after = tuple(r["sha"] for r in heads if r["seq"] > at["seq"])
        return HeadTimeline(found=True, before=before[-1] if before else None, after=after,
                            received_at=at["received_at"])

    def planned_at(self, repo: str, sha: str) -> float | None:
        """When the bot last recorded a plan of any experiment at ``sha`` (None: never)."""
        with self.engine.connect() as conn:
            return conn.execute(select(func.min(plans.c.updated_at)).where(
                (plans.c.repo == repo) & (plans.c.sha == sha))).scalar_one_or_none()

    def add_run(self, **values: Any) -> bool:
        """Record a run as queued; False if this run id exists (dispatch is idempotent)."""
        now = time.time()
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(runs).values(status="queued", created_at=now, updated_at=now, **values))
        except IntegrityError:
            return False
        return True

    def set_run_status(self, run_id: str, status: str, detail: str | None = None) -> None:
        with self.engine.begin() as conn:
            conn.execute(update(runs).where(runs.c.run_id == run_id).values(
                status=status, detail=detail, updated_at=time.time()))

    def run(self, run_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(runs).where(runs.c.run_id == run_id)).mappings().first()
        return dict(row) if row else None

    def runs(self, repo: str, pr: int | None = None) -> list[dict[str, Any]]:
        cond = runs.c.repo == repo
        if pr is not None:
            cond = cond & (runs.c.pr == pr)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(select(runs).where(cond).order_by(runs.c.created_at)).mappings()]

    def active_runs_for_installation(self, installation_id: int) -> list[dict[str, Any]]:
        """Queued and running runs started through one App installation (cancelled when it is uninstalled)."""
        cond = (runs.c.installation_id == installation_id) & runs.c.status.in_(ACTIVE_RUN_STATES)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(select(runs).where(cond).order_by(runs.c.created_at)).mappings()]

    def object_id(self, table: Table, **key: Any) -> int | None:
        cond = [table.c[k] == v for k, v in key.items()]
        col = table.c.comment_id if table is comments else table.c.check_run_id
        with self.engine.connect() as conn:
            val = conn.execute(select(col).where(*cond)).scalar_one_or_none()
        return int(val) if val is not None else None

    def remember_object(self, table: Table, object_id: int, **key: Any) -> None:
        col = "comment_id" if table is comments else "check_run_id"
        cond = [table.c[k] == v for k, v in key.items()]
        with self.engine.begin() as conn:
            if conn.execute(select(table).where(*cond)).first():
                conn.execute(update(table).where(*cond).values({col: object_id}))
            else:
                conn.execute(insert(table).values({col: object_id, **key}))


class LedgerView:
    """The read-only slice of ledger state a handler may look at (keeps handlers free of writes)."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def preregistration(self, repo: str, issue_number: int) -> dict[str, Any] | None:
        return self._ledger.preregistration(repo, issue_number)

    def approvals(self, repo: str, pr: int) -> list[dict[str, Any]]:
        return self._ledger.approvals(repo, pr)

    def runs(self, repo: str, pr: int) -> list[dict[str, Any]]:
        return self._ledger.runs(repo, pr)

    def active_runs_for_installation(self, installation_id: int) -> list[dict[str, Any]]:
        return self._ledger.active_runs_for_installation(installation_id)

    def head_timeline(self, repo: str, pr: int, comment_id: int) -> HeadTimeline:
        return self._ledger.head_timeline(repo, pr, comment_id)

    def planned_at(self, repo: str, sha: str) -> float | None:
        return self._ledger.planned_at(repo, sha)
