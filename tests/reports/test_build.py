"""Reports index from a GitHub snapshot: linking, status, conclusions, overlay, escaping."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.reports.build import build_reports, linked_issue_numbers, section_after_heading
from bot.reports.collect import Snapshot
from bot.reports.model import Overlay, load_overlay
from bot.reports.render import write_reports
from runner.errors import ConfigError
from runner.executor.dispatch import run_id

BOT = "openlab[bot]"
RID1 = run_id("lab/x", 10, "a" * 40, "experiments/exp1_filter.py", 1)
RID3 = run_id("lab/x", 11, "b" * 40, "experiments/speedrun/tiny/tiny.py", 1)


def issue(n: int, labels: list[str], body: str = "", state: str = "open") -> dict:
    return {
        "number": n,
        "title": f"Experiment {n}",
        "body": body,
        "state": state,
        "labels": labels,
        "html_url": f"https://github.com/lab/x/issues/{n}",
        "user": "ada",
        "created_at": "2026-11-01T00:00:00Z",
    }


def comment(n: int, body: str, user: str = BOT) -> dict:
    return {
        "issue_number": n,
        "user": user,
        "body": body,
        "html_url": f"https://github.com/lab/x/issues/{n}#c",
    }


def snapshot() -> Snapshot:
    return Snapshot(
        repo="lab/x",
        html_url="https://github.com/lab/x",
        issues=[
            issue(1, ["experiment", "preregistered", "topic:data"]),
            issue(
                2,
                ["experiment", "preregistered", "topic:data"],
                body="### Hypothesis\nx\n\n### Conclusion\nFiltering helps: <b>-0.03 BPB</b>.",
            ),
            issue(3, ["speedrun", "preregistered"]),
            issue(4, ["experiment", "needs-info"]),
            issue(5, ["bug"]),
            issue(6, ["experiment", "preregistered", "topic:optim"]),
        ],
        pulls=[
            {
                "number": 10,
                "title": "exp1: filter",
                "body": "Preregistration: #1",
                "state": "open",
                "merged_at": None,
                "html_url": "https://github.com/lab/x/pull/10",
                "head_ref": "exp1-filter",
            },
            {
                "number": 11,
                "title": "speedrun",
                "body": "",
                "state": "open",
                "merged_at": None,
                "html_url": "https://github.com/lab/x/pull/11",
                "head_ref": "speedrun/exp3_tiny",
            },
            {
                "number": 12,
                "title": "optim",
                "body": "refs #6",
                "state": "open",
                "merged_at": None,
                "html_url": "https://github.com/lab/x/pull/12",
                "head_ref": "optim",
            },
        ],
        comments=[
            comment(
                10,
                f"<!-- openlab:run:{RID1} -->\nRunning `{RID1}`, W&B https://wandb.ai/lab/openlab/runs/{RID1}",
            ),
            comment(
                11,
                f"<!-- openlab:results:{RID3} -->\nBPB 1.234 on val at 3.1e15 FLOPs.\n| a | b |",
            ),
            comment(12, "<!-- openlab:results:forged -->\nforged", user="mallory"),
        ],
    )


def by_number(groups) -> dict:  # type: ignore[no-untyped-def]
    return {r.number: (g.title, r) for g in groups for r in g.reports}


def test_statuses_links_and_groups() -> None:
    rows = by_number(
        build_reports(
            snapshot(),
            Overlay(),
            BOT,
            executions=[(RID1, "experiments/exp1_filter.py", "running")],
        )
    )
    assert set(rows) == {1, 2, 3, 4, 6}  # issue 5 is not an experiment
    assert rows[1][1].status == "running" and rows[1][0] == "data"
    assert rows[1][1].wandb[0].url == f"https://wandb.ai/lab/openlab/runs/{RID1}"
    assert rows[1][1].executions[0].url == f"../executions/{RID1}.html"
    assert rows[2][1].status == "done" and rows[2][1].conclusion_source == "issue"
    assert rows[3][1].status == "done" and rows[3][1].conclusion == "BPB 1.234 on val at 3.1e15 FLOPs."
    assert rows[4][1].status == "needs-info"
    assert rows[6][1].status == "preregistered"  # a forged results marker from another user is ignored
    assert rows[3][0] == "Other experiments"


def test_overlay_groups_orders_curates_and_hides() -> None:
    overlay = Overlay(
        groups=[{"title": "Highlights", "issues": [6, 2]}], conclusions={1: "Curated."}, hide=[4]
    )
    groups = build_reports(snapshot(), overlay, BOT)
    assert groups[0].title == "Highlights" and [r.number for r in groups[0].reports] == [6, 2]
    rows = by_number(groups)
    assert 4 not in rows
    assert rows[1][1].conclusion == "Curated." and rows[1][1].conclusion_source == "curated"
    assert rows[1][1].status == "done"


def test_rendered_page_escapes_issue_text(tmp_path: Path) -> None:
    snap = snapshot()
    snap.issues[0]["title"] = "<script>alert(1)</script>"
    page = write_reports(build_reports(snap, Overlay(), BOT), tmp_path, "lab/x", snap.html_url)
    html = page.read_text()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html
    assert "<b>-0.03 BPB</b>" not in html
    assert (tmp_path / "reports" / "reports.json").exists()


def test_helpers() -> None:
    assert section_after_heading("### Conclusion\n_No response_\n") is None
    assert section_after_heading("## Conclusions\nyes\n## Next\nno") == "yes"
    assert linked_issue_numbers({"body": "Preregistration: #7 and closes #8", "head_ref": "exp9_x"}) == {
        7,
        8,
        9,
    }


def test_overlay_errors_name_the_key(tmp_path: Path) -> None:
    p = tmp_path / "reports.yml"
    p.write_text("groups:\n  - title: A\n    isues: [1]\n")
    with pytest.raises(ConfigError, match=r"groups\.0\.isues: unknown key"):
        load_overlay(p)
    p.write_text("groups: [\n")
    with pytest.raises(ConfigError, match="malformed YAML"):
        load_overlay(p)
    assert load_overlay(tmp_path / "missing.yml") == Overlay()
