"""Run comments link the run's execution page on the lab's site, which the reports build publishes."""

from __future__ import annotations

from bot.config.repo_config import parse_repo_config
from bot.runs.report import render_run_comment
from bot.runs.services import execution_page_url
from bot.runs.state import RunReport
from runner.executor.dispatch import run_id


def test_run_comment_links_the_execution_page() -> None:
    rid = run_id("lab/x", 3, "a" * 40, "experiments/exp3_x.py", 1)
    config = parse_repo_config("site_url: https://lab.github.io/x/\n")
    url = execution_page_url(config.site_url, rid)
    assert url == f"https://lab.github.io/x/executions/{rid}.html"
    run = {
        "run_id": rid,
        "experiment": "experiments/exp3_x.py",
        "sha": "a" * 40,
        "attempt": 1,
        "requested_by": "maria",
        "pr": 3,
        "repo": "lab/x",
    }
    report = RunReport(run_id=rid, execution_url=url, dashboard_url="http://127.0.0.1:8265/#/jobs/" + rid)
    body = render_run_comment(run, report, status="running", status_line="running")
    assert f"[execution page]({url})" in body and "[Ray job](" in body


def test_no_site_no_link() -> None:
    assert execution_page_url(None, "olr-x-pr1-aaaaaaa-a1-0123456789") is None
    assert parse_repo_config(None).site_url is None
