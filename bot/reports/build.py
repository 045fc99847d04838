"""From a GitHub snapshot (plus the overlay and the store's executions) to grouped report rows.

Pure functions: no network, so the 2,000-issue benchmark measures this and the rendering alone.

As Marin's generator (``scripts/pm/itemize_experiment_issues.py``) does, W&B links are also taken from the
issue body: runs (``wandb.ai/<entity>/<project>/runs/<id>``) and reports (``wandb.ai/.../reports/...`` and
``api.wandb.ai/links/...``); and a conclusion may be an inline ``Conclusion: ...`` line (bold or not) as well
as a ``## Conclusion`` section. Issues labelled as Marin labels them (``experiments``,
``community-experiment-submission``) count as experiments.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from bot.reports.collect import Snapshot
from bot.reports.model import ExecutionLink, ExperimentReport, Group, Link, Overlay, Status
from leaderboard.execution_pages import page_name
from runner.executor.dispatch import RUN_ID_PATTERN

MARKER = re.compile(r"<!--\s*openlab:([a-z0-9_-]+):([^\s>]*)\s*-->")
WANDB = re.compile(r"https://(?:api\.wandb\.ai/links|wandb\.ai)/[A-Za-z0-9_.\-/]+")
INLINE_CONCLUSION = re.compile(r"(?im)^[ \t>*_-]*(?:\*\*|__)?conclusions?(?:\*\*|__)?\s*:(?:\*\*|__)?[ \t]*(\S.*)$")
EXPERIMENT_LABELS = frozenset({"experiment", "experiments", "community-experiment-submission"})
PREREG = re.compile(r"(?i)preregistration:\s*#(\d+)|\b(?:closes|fixes|resolves|refs?)\s+#(\d+)")
BRANCH = re.compile(r"(?i)(?:^|/)exp-?(\d+)(?:[_-]|$)")
CONCLUSION = re.compile(r"(?im)^#{1,4}\s*conclusions?\s*$")
HEADING = re.compile(r"(?m)^#{1,6}\s")
RUN_ID = re.compile(rf"\b{RUN_ID_PATTERN}\b")
MAX_CONCLUSION = 600


def section_after_heading(body: str) -> str | None:
    """The text under a 'Conclusion' heading, up to the next heading, else an inline 'Conclusion: ...' line;
    None if absent or blank."""
    m = CONCLUSION.search(body or "")
    if not m:
        inline = INLINE_CONCLUSION.search(body or "")
        text = inline.group(1).strip().rstrip("*_ ").strip() if inline else ""
        return text[:MAX_CONCLUSION] if text and text != "_No response_" else None
    rest = body[m.end() :]
    nxt = HEADING.search(rest)
    text = (rest[: nxt.start()] if nxt else rest).strip()
    if not text or text == "_No response_":
        return None
    return text[:MAX_CONCLUSION]


def wandb_title(url: str) -> str:
    """A run's id for a run link (as before); 'W&B report' for a report (Marin's generator names them so)."""
    if "/runs/" in url:
        return url.rstrip("/").rsplit("/", 1)[-1]
    return "W&B report"


def _bot_summary(body: str) -> str | None:
    lines = [
        ln.strip()
        for ln in MARKER.sub("", body).splitlines()
        if ln.strip() and not ln.strip().startswith("|")
    ]
    return " ".join(lines[:2])[:MAX_CONCLUSION] or None


def linked_issue_numbers(pull: dict[str, Any]) -> set[int]:
    found = {int(a or b) for a, b in PREREG.findall(pull.get("body", ""))}
    m = BRANCH.search(pull.get("head_ref", ""))
    if m:
        found.add(int(m.group(1)))
    return found


def _status(
    issue: dict[str, Any], bot_kinds: set[str], conclusion: bool, labels: set[str], exec_states: Iterable[str] = ()
) -> Status:
    states = list(exec_states)
    # Every execution of the experiment has ended: it is finished even before a results comment exists.
    ended = bool(states) and all(st in ENDED for st in states)
    if issue["state"] == "closed" or conclusion or "results" in bot_kinds or ended:
        return "done"
    if "run" in bot_kinds:
        return "running"
    if "needs-info" in labels:
        return "needs-info"
    return "preregistered" if "preregistered" in labels else "needs-info"


ENDED = frozenset({"succeeded", "failed", "cancelled", "skipped"})
ExecIndex = tuple[dict[str, str], dict[int, list[tuple[str, str]]]]
EXP_FILE = re.compile(r"(?:^|/)exp0*(\d+)_[^/]*\.py$")


def _index_executions(executions: Iterable[tuple[str, str, str]]) -> ExecIndex:
    """run id -> status, and issue number -> [(run id, status)] from experiment files named exp<N>_*.py."""
    by_run: dict[str, str] = {}
    by_issue: dict[int, list[tuple[str, str]]] = {}
    for rid, exp, status in executions:
        by_run[rid] = status
        m = EXP_FILE.search(exp)
        if m:
            by_issue.setdefault(int(m.group(1)), []).append((rid, status))
    return by_run, by_issue


def build_reports(
    snap: Snapshot,
    overlay: Overlay,
    bot_login: str,
    executions: Iterable[tuple[str, str, str]] = (),
    execution_base: str = "../executions",
) -> list[Group]:
    """Group every experiment/speedrun issue into rows. ``executions`` = (run_id, experiment file, status)."""
    pulls_by_issue: dict[int, list[dict[str, Any]]] = {}
    for p in snap.pulls:
        for n in linked_issue_numbers(p):
            pulls_by_issue.setdefault(n, []).append(p)
    comments_by_number: dict[int, list[dict[str, Any]]] = {}
    for c in snap.comments:
        if c["issue_number"] is not None:
            comments_by_number.setdefault(c["issue_number"], []).append(c)
    exec_index = _index_executions(executions)
    hidden = set(overlay.hide)
    reports: dict[int, ExperimentReport] = {}
    for issue in snap.issues:
        labels = set(issue["labels"])
        kind = "speedrun" if "speedrun" in labels else "experiment" if labels & EXPERIMENT_LABELS else None
        if kind is None or issue["number"] in hidden:
            continue
        reports[issue["number"]] = _report(
            issue,
            kind,
            labels,
            pulls_by_issue,
            comments_by_number,
            overlay,
            bot_login,
            exec_index,
            execution_base,
        )
    return _group(reports, overlay)


def _report(
    issue: dict[str, Any],
    kind: str,
    labels: set[str],
    pulls_by_issue: dict[int, list[dict[str, Any]]],
    comments_by_number: dict[int, list[dict[str, Any]]],
    overlay: Overlay,
    bot_login: str,
    executions: ExecIndex,
    execution_base: str,
) -> ExperimentReport:
    n = issue["number"]
    pulls = pulls_by_issue.get(n, [])
    threads = [n, *(p["number"] for p in pulls)]
    comments = [c for t in threads for c in comments_by_number.get(t, [])]
    bot_comments = [c for c in comments if c["user"] == bot_login]
    bot_kinds = {m.group(1) for c in bot_comments for m in MARKER.finditer(c["body"])}
    wandb = sorted({u.rstrip(".") for c in [*bot_comments, issue] for u in WANDB.findall(c["body"])})
    run_ids = {r for c in bot_comments for r in RUN_ID.findall(c["body"])}
    by_run, by_issue = executions
    execs = dict(by_issue.get(n, []))
    execs.update({rid: by_run[rid] for rid in sorted(run_ids) if rid in by_run})
    conclusion, source = overlay.conclusions.get(n), "curated"
    if conclusion is None:
        human = [c for c in comments_by_number.get(n, []) if c["user"] != bot_login]
        conclusion = next((s for c in reversed(human) if (s := section_after_heading(c["body"]))), None)
        conclusion = section_after_heading(issue["body"]) or conclusion
        source = "issue"
    if conclusion is None:
        results = [
            c for c in bot_comments if any(m.group(1) == "results" for m in MARKER.finditer(c["body"]))
        ]
        conclusion = _bot_summary(results[-1]["body"]) if results else None
        source = "bot" if conclusion else "none"
    return ExperimentReport(
        number=n,
        title=issue["title"],
        url=issue["html_url"],
        kind=kind,  # type: ignore[arg-type]
        status=_status(issue, bot_kinds, source in ("curated", "issue"), labels, execs.values()),
        topics=sorted(
            lb.removeprefix(overlay.topic_prefix) for lb in labels if lb.startswith(overlay.topic_prefix)
        ),
        author=issue["user"],
        created_at=issue["created_at"][:10],
        pulls=[Link(title=f"#{p['number']} {p['title']}", url=p["html_url"]) for p in pulls],
        wandb=[Link(title=wandb_title(u), url=u) for u in wandb],
        executions=[
            ExecutionLink(title=f"{rid} ({st})", url=f"{execution_base}/{page_name(rid)}", run_id=rid, status=st)
            for rid, st in execs.items()
        ],
        conclusion=conclusion,
        conclusion_source=source,  # type: ignore[arg-type]
    )


def _group(reports: dict[int, ExperimentReport], overlay: Overlay) -> list[Group]:
    groups: list[Group] = []
    placed: set[int] = set()
    for og in overlay.groups:
        rows = [reports[n] for n in og.issues if n in reports and n not in placed]
        placed.update(r.number for r in rows)
        groups.append(Group(title=og.title, description=og.description, reports=rows))
    by_topic: dict[str, list[ExperimentReport]] = {}
    for n in sorted(reports, reverse=True):
        if n in placed:
            continue
        r = reports[n]
        by_topic.setdefault(r.topics[0] if r.topics else "", []).append(r)
    for topic in sorted(t for t in by_topic if t):
        groups.append(Group(title=topic, reports=by_topic[topic]))
    if "" in by_topic:
        groups.append(Group(title="Other experiments", reports=by_topic[""]))
    return [g for g in groups if g.reports]
