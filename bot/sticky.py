"""The one sticky comment per pull request: plan, approval, runs, results and the Pareto update, always true.

Writers do not post comments of their own for a PR's lifecycle: an ``UpsertComment`` of a section kind
(``plan``, ``run``, ``pareto``) stores its body as a *section* in the ledger, and the PR's single comment
(hidden key ``<!-- openlab:pr:N -->``) is recomposed from all sections and edited in place (Codecov-style).

State is never copied into a section: the approval line, the runs table and each run's heading are rendered from
the ledger's ``runs`` and ``approvals`` tables at the moment the comment is composed, so the comment, the check
run and the reports index (which read the same rows) cannot disagree. Each section keeps its own hidden marker
inside the comment, so tools (and tests) can still find "the run section of run X".
"""

from __future__ import annotations

import re
import time
from typing import Any

from markupsafe import Markup
from sqlalchemy import delete, insert, select, update

from bot.github.render import marker, render
from bot.ledger import Ledger
from bot.ledger_tables import comment_sections

STICKY_KIND = "pr"
SECTION_KINDS = frozenset({"plan", "run", "pareto"})
NOTICE_KEY = "notice"
HEAD_KEY = "head"  # the PR head SHA last seen by a pull-request or command handler (not shown)
MAX_DETAILED_RUNS = 5
ICONS = {"queued": "⏳", "running": "🚀", "succeeded": "✅", "failed": "❌", "cancelled": "🚫", "refused": "🚫"}
_MARK = re.compile(r"<!-- openlab:([a-z_]+):([^ ]+) -->")


def save_section(ledger: Ledger, repo: str, number: int, kind: str, key: str, body: str) -> None:
    """Store one section's body (its own marker first, so the composed comment keeps it findable)."""
    mark = marker(kind, key)
    body = body.strip()
    if not body.startswith(mark):
        body = f"{mark}\n{body}"
    where = [comment_sections.c.repo == repo, comment_sections.c.issue_number == number,
             comment_sections.c.key == f"{kind}:{key}"]
    with ledger.engine.begin() as conn:
        values = {"body": body, "updated_at": time.time()}
        if conn.execute(select(comment_sections.c.key).where(*where)).first():
            conn.execute(update(comment_sections).where(*where).values(values))
        else:
            conn.execute(insert(comment_sections).values(repo=repo, issue_number=number, key=f"{kind}:{key}",
                                                         **values))


def save_notice(ledger: Ledger, repo: str, number: int, notice: str | None) -> None:
    """The latest one-off notice of the runs part (e.g. "a push revoked the approval"); None clears it."""
    if notice:
        save_section(ledger, repo, number, NOTICE_KEY, str(number), notice)
        return
    with ledger.engine.begin() as conn:
        conn.execute(delete(comment_sections).where(
            comment_sections.c.repo == repo, comment_sections.c.issue_number == number,
            comment_sections.c.key == f"{NOTICE_KEY}:{number}"))


def sections(ledger: Ledger, repo: str, number: int) -> dict[str, str]:
    cond = [comment_sections.c.repo == repo, comment_sections.c.issue_number == number]
    with ledger.engine.connect() as conn:
        rows = conn.execute(select(comment_sections.c.key, comment_sections.c.body).where(*cond)
                            .order_by(comment_sections.c.updated_at)).all()
    return {k: b for k, b in rows}


def _links(ledger: Ledger, run_id: str) -> Markup | None:
    from bot.runs.report import link
    from bot.runs.state import RunStates

    report = RunStates(ledger.engine).get(run_id)
    if report is None:
        return None
    found = [x for x in (link("W&B", report.wandb_url), link("execution", report.execution_url),
                         link("Ray job", report.dashboard_url)) if x]
    return Markup(" · ").join(found) if found else None


def _approval_line(approval: dict[str, Any] | None, head_runs: list[dict[str, Any]], label: str) -> str:
    if approval is None:
        return (f"No approval for the current head. A user with write access can comment `/run` or add the "
                f"`{label}` label.")
    who = f"{approval['approved_by']} (via {approval['via']})"
    if head_runs and all(r["status"] == "refused" for r in head_runs):
        # The request was accepted, but the dispatcher refused every run: never show that as an approval.
        return f"`/run` by {who} for `{approval['sha'][:7]}`: refused, see below."
    return f"Approved for `{approval['sha'][:7]}` by {who}."


def _heading(run: dict[str, Any]) -> str:
    return f"#### {ICONS.get(run['status'], '•')} run `{run['run_id']}`: {run['status']}"


def _run_section(body: str, run: dict[str, Any]) -> str:
    """The stored run section with its heading re-rendered from the ledger (the state's one source)."""
    lines = body.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("### "):
            lines[i] = _heading(run)
            break
    return "\n".join(lines)


def compose(ledger: Ledger, repo: str, number: int, *, head_sha: str | None = None,
            approval_label: str = "approved-to-run") -> str:
    """The whole sticky comment of PR ``number`` from the ledger (sections + live run state)."""
    from bot.github.escape import untrusted

    parts = sections(ledger, repo, number)
    runs = ledger.runs(repo, number)
    approvals = ledger.approvals(repo, number)
    if head_sha is not None:
        save_section(ledger, repo, number, HEAD_KEY, str(number), head_sha)  # for writers that do not know it
    elif f"{HEAD_KEY}:{number}" in parts:
        head_sha = parts[f"{HEAD_KEY}:{number}"].split("\n", 1)[-1].strip()
    else:
        head_sha = runs[-1]["sha"] if runs else (approvals[-1]["sha"] if approvals else None)
    current = [a for a in approvals if a["sha"] == head_sha]
    approval = current[-1] if current else None
    head_runs = [r for r in runs if approval and r["sha"] == approval["sha"]]
    rows = [{"icon": ICONS.get(r["status"], "•"), "run_id": r["run_id"], "experiment": untrusted(r["experiment"], 200),
             "sha": r["sha"], "attempt": r["attempt"], "status": r["status"], "links": _links(ledger, r["run_id"])}
            for r in runs[-30:]]
    plan = next((b for k, b in reversed(parts.items()) if k.startswith("plan:")), None)
    detailed: list[str] = []
    for r in reversed(runs[-MAX_DETAILED_RUNS:]):
        body = parts.get(f"run:{r['run_id']}")
        if body:
            detailed.append(_run_section(body, r))
        if f"pareto:{r['run_id']}" in parts:
            detailed.append(parts[f"pareto:{r['run_id']}"])
    return render(
        "sticky.md.j2", marker=Markup(marker(STICKY_KIND, str(number))), number=number,
        plan=Markup(plan) if plan else None, notice=Markup(parts[f"{NOTICE_KEY}:{number}"].split("\n", 1)[1])
        if f"{NOTICE_KEY}:{number}" in parts else None,
        approval_line=Markup(_approval_line(approval, head_runs, approval_label)),
        runs=rows, older=max(0, len(runs) - MAX_DETAILED_RUNS), details=[Markup(d) for d in detailed],
    )


def section_of(body: str, kind: str) -> list[str]:
    """The sections of ``kind`` inside a composed comment, each starting with its own marker."""
    cuts = [(m.start(), m.group(1)) for m in _MARK.finditer(body)]
    out = []
    for i, (start, k) in enumerate(cuts):
        if k == kind:
            end = cuts[i + 1][0] if i + 1 < len(cuts) else len(body)
            out.append(body[start:end].strip())
    return out
