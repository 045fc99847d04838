"""The ledger's tables (SQLAlchemy Core): what the bot remembers, one table per concept. :mod:`bot.ledger` reads
and writes them.

inbox (claimed deliveries, written by the webhook process only, in its own SQLite file), deliveries (what the
worker made of each: status, actions, cursor, attempts), preregistrations, approvals (bound to a SHA), runs, plans,
pr_timeline (the PR heads the bot saw, for binding approvals), comments, comment_sections and check_runs (ids of
the objects the bot owns on GitHub, so upserts edit instead of duplicating).
"""

from __future__ import annotations

from sqlalchemy import Column, Float, Integer, LargeBinary, MetaData, String, Table, Text, UniqueConstraint

metadata = MetaData()

inbox_metadata = MetaData()
# Written only by the webhook process: the claim. In SQLite it lives in its own file, so the worker's writes
# never hold the lock an acknowledgement waits for (a preempted low-priority writer would stall the ingress).
inbox = Table(
    "inbox", inbox_metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("guid", String(64), nullable=False, unique=True),
    Column("event", String(64), nullable=False),
    Column("action", String(64)),
    Column("payload", LargeBinary, nullable=False),
    Column("received_at", Float, nullable=False),
)
# Written only by the worker: what became of each claimed delivery.
deliveries = Table(
    "deliveries", metadata,
    Column("seq", Integer, primary_key=True),
    Column("guid", String(64), nullable=False, unique=True),
    Column("event", String(64), nullable=False),
    Column("action", String(64)),
    Column("status", String(16), nullable=False, index=True),  # queued | done | ignored | failed
    Column("attempts", Integer, nullable=False, default=0),
    Column("actions", Text),
    Column("actions_done", Integer, nullable=False, default=0),
    Column("error", Text),
    Column("received_at", Float, nullable=False),
    Column("not_before", Float, nullable=False, default=0.0),
    Column("done_at", Float),
)
preregistrations = Table(
    "preregistrations", metadata,
    Column("repo", String(200), primary_key=True),
    Column("issue_number", Integer, primary_key=True),
    Column("form", String(32), nullable=False),
    Column("status", String(16), nullable=False),
    Column("title", Text, nullable=False),
    Column("slug", String(100), nullable=False),
    Column("fields", Text, nullable=False),
    Column("track", String(64)),
    Column("planned_flops", Float),
    Column("updated_at", Float, nullable=False),
)
approvals = Table(
    "approvals", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("repo", String(200), nullable=False),
    Column("pr", Integer, nullable=False),
    Column("sha", String(64), nullable=False),
    Column("approved_by", String(100), nullable=False),
    Column("via", String(16), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("revoked_at", Float),
    Column("revoke_reason", Text),
    UniqueConstraint("repo", "pr", "sha", "approved_by", "via"),
)
runs = Table(
    "runs", metadata,
    Column("run_id", String(64), primary_key=True),
    Column("repo", String(200), nullable=False),
    Column("pr", Integer, nullable=False),
    Column("sha", String(64), nullable=False),
    Column("experiment", Text, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("status", String(16), nullable=False),  # queued | running | succeeded | failed | cancelled
    Column("requested_by", String(100), nullable=False),
    Column("installation_id", Integer),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("detail", Text),
)
plans = Table(
    "plans", metadata,
    Column("repo", String(200), primary_key=True),
    Column("sha", String(64), primary_key=True),
    Column("experiment", String(300), primary_key=True),
    Column("pr", Integer, nullable=False),
    Column("model_flops", Float),
    Column("tokens", Integer),
    Column("error", Text),
    Column("updated_at", Float, nullable=False),
)
# The order in which the bot learnt each PR's head and each command comment (inbox order, not GitHub's clocks,
# which a committer can forge): an approval by comment binds to the head that was current when it arrived.
pr_timeline = Table(
    "pr_timeline", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("seq", Float, nullable=False, index=True),  # inbox seq; an observed head sits at its comment's seq + 0.5
    Column("repo", String(200), nullable=False),
    Column("pr", Integer, nullable=False),
    Column("kind", String(16), nullable=False),  # head | comment | observed
    Column("sha", String(64)),
    Column("comment_id", Integer),
    Column("received_at", Float, nullable=False),
)
comments = Table(
    "comments", metadata,
    Column("repo", String(200), primary_key=True),
    Column("issue_number", Integer, primary_key=True),
    Column("key", String(200), primary_key=True),
    Column("comment_id", Integer, nullable=False),
)
# Sections of the one sticky PR comment (bot/sticky.py): each writer stores its part, the comment is recomposed.
comment_sections = Table(
    "comment_sections", metadata,
    Column("repo", String(200), primary_key=True),
    Column("issue_number", Integer, primary_key=True),
    Column("key", String(200), primary_key=True),
    Column("body", Text, nullable=False),
    Column("updated_at", Float, nullable=False),
)
check_runs = Table(
    "check_runs", metadata,
    Column("repo", String(200), primary_key=True),
    Column("head_sha", String(64), primary_key=True),
    Column("name", String(100), primary_key=True),
    Column("check_run_id", Integer, nullable=False),
)

ACTIVE_RUN_STATES = ("queued", "running")
