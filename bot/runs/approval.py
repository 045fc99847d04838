"""Which head SHA a `/run` comment approves: the one that was current when the comment arrived.

An `issue_comment` carries no SHA, and the PR author can push between the comment and the moment the worker
reads the PR (another PR's slow plan is enough of a delay). GitHub's commit dates are set by the committer, so
they prove nothing; the bot's own inbox order does. The ledger records, in inbox order, every head a
`pull_request` delivery announced and every command comment (:func:`timeline_mark`); :func:`bind_head` approves
the head learnt last before the comment, and refuses when the head changed after it or when it cannot tell.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup


@dataclass(frozen=True)
class HeadTimeline:
    """What the inbox order says about one command comment: ``found`` (the comment is in the ledger), the head
    learnt last ``before`` it, the heads learnt ``after`` it, and when it was received (bot clock)."""

    found: bool
    before: str | None
    after: tuple[str, ...]
    received_at: float | None


def timeline_mark(event_name: str, raw: bytes) -> dict[str, Any] | None:
    """(repo, pr, kind, sha | comment_id) of a pull_request head or a PR comment; None for anything else."""
    try:
        p = json.loads(raw)
        repo = p["repository"]["full_name"]
        if event_name == "pull_request":
            pull = p["pull_request"]
            return {"repo": repo, "pr": int(pull["number"]), "kind": "head", "sha": str(pull["head"]["sha"])}
        if p.get("action") == "created" and p["issue"].get("pull_request") is not None:
            return {"repo": repo, "pr": int(p["issue"]["number"]), "kind": "comment",
                    "comment_id": int(p["comment"]["id"])}
    except (ValueError, KeyError, TypeError, AttributeError):
        return None  # the worker reports the malformed payload when it parses it
    return None


@dataclass(frozen=True)
class Binding:
    """The SHA a comment approves, or why none (``observed``: the head read now, recorded for a later /run)."""

    sha: str | None
    problem: str | None = None
    observed: str | None = None


def bind_head(tl: HeadTimeline, api_head: str, planned_at: float | None) -> Binding:
    """The head the commenter could have reviewed, given the inbox timeline and the PR's head read just now.

    Known head before the comment: approved only if nothing moved since (no later head in the inbox, and the
    API agrees). Unknown (the bot never saw a pull_request event of this PR before the comment, e.g. a plan
    posted by the Actions workflow): the current head is approved only if the bot planned it before the comment
    arrived. Every refusal names the head read now and records it (``observed``): the reply shows it to the
    commenter, so a later `/run` may approve it (and only it: any push after that reply is in the timeline again).
    """
    if tl.before is not None:
        moved = [s for s in (*tl.after, api_head) if s != tl.before]
        if not moved:
            return Binding(tl.before)
        return Binding(None, Markup(f"the head moved from `{tl.before[:7]}` (current when you commented) to "
                             f"`{moved[-1][:7]}` after your comment, so nothing was approved; review "
                             f"`{api_head[:7]}` and comment `/run` again"), observed=api_head if tl.found else None)
    if tl.found and not [s for s in tl.after if s != api_head] and planned_at is not None \
            and tl.received_at is not None and planned_at < tl.received_at:
        return Binding(api_head)
    return Binding(None, Markup(f"I cannot tell which commit was the head when you commented (no push of this PR "
                         f"reached me before it); the head is now `{api_head[:7]}`: review it and comment `/run` "
                         f"again to approve it"), observed=api_head if tl.found else None)
