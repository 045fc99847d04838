"""`openlab reports build` over real HTTP against the GitHub sandbox, with the requests checked against
GitHub's published REST description (npm @octokit/openapi) and the answers against its response schemas."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.sandbox.driver import SandboxDriver
from bot.sandbox.server import create_sandbox_app
from bot.sandbox.state import SandboxState
from runner.cli import main
from runner.executor.dispatch import run_id
from tests.bot import github_spec as gs
from tests.bot.helpers import ServerThread
from tests.browse.records import write_launch

REPO = "lab/x"
BOT = "openlab[bot]"


@pytest.fixture
def sandbox() -> Iterator[tuple[SandboxDriver, SandboxState]]:
    state = SandboxState()
    with ServerThread(create_sandbox_app(state)) as srv:
        driver = SandboxDriver(srv.url, None, "unused-secret")
        driver.setup_repo(REPO, {"README.md": "# x\n"}, tokens={"tok-reports": BOT})
        yield driver, state


def test_reports_build_over_http(
    sandbox: tuple[SandboxDriver, SandboxState], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver, state = sandbox
    done = driver.open_issue(
        REPO,
        "ada",
        "Filter with fastText",
        "### Conclusion\nFiltering helps.",
        labels=["experiment", "preregistered", "topic:data"],
    )
    running = driver.open_issue(
        REPO, "bob", "<img src=x onerror=alert(1)> wider MLP", "body", labels=["experiment", "preregistered"]
    )
    driver.open_issue(REPO, "eve", "Not an experiment", "bug", labels=["bug"])
    pr = driver.open_pull(
        REPO,
        "bob",
        f"exp{running}-wide",
        {f"experiments/exp{running}_wide.py": "x = 1\n"},
        "wider MLP",
        body=f"Preregistration: #{running}",
    )
    rid = run_id(REPO, pr, "a" * 40, f"experiments/exp{running}_wide.py", 1)
    driver.comment(
        REPO, pr, BOT, f"<!-- openlab:run:{rid} -->\nRunning `{rid}`: https://wandb.ai/lab/openlab/runs/{rid}"
    )
    store = tmp_path / "store"
    write_launch(str(store), rid, {"ingest": "succeeded", "tokenize": "running"})
    for i in range(130):  # more than one page of comments
        driver.comment(REPO, done, "ada", f"note {i}")

    monkeypatch.setenv("GITHUB_TOKEN", "tok-reports")
    monkeypatch.setenv("GITHUB_API_URL", str(driver.sandbox.base_url).rstrip("/"))
    out = tmp_path / "site"
    res = CliRunner().invoke(
        main,
        [
            "reports",
            "build",
            "--repo",
            REPO,
            "--out",
            str(out),
            "--prefix",
            str(store),
            "--overlay",
            str(tmp_path / "none.yml"),
        ],
    )
    assert res.exit_code == 0, res.output
    data = {
        r["number"]: r
        for g in json.loads((out / "reports" / "reports.json").read_text())
        for r in g["reports"]
    }
    assert set(data) == {done, running}
    assert data[done]["status"] == "done" and data[done]["conclusion"] == "Filtering helps."
    assert data[running]["status"] == "running"
    assert data[running]["executions"][0]["url"] == f"../executions/{rid}.html"
    assert (out / "executions" / f"{rid}.html").exists()
    html = (out / "reports" / "index.html").read_text()
    assert "<img src=x" not in html and "&lt;img src=x" in html

    gs.require_specs()
    reads = [r for r in state.requests if r["path"].startswith("/repos/")]
    assert {r["path"] for r in reads} == {
        f"/repos/{REPO}/issues",
        f"/repos/{REPO}/pulls",
        f"/repos/{REPO}/issues/comments",
    }
    assert sum(1 for r in reads if r["path"].endswith("/issues/comments")) == 2  # paged: 100 + the rest
    for r in reads:
        assert r["method"] == "GET" and gs.operation("GET", r["path"]) is not None, r["path"]


def test_rate_limited_refresh_changes_nothing(
    sandbox: tuple[SandboxDriver, SandboxState], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver, _ = sandbox
    # Primary rate limit with its reset an hour away: the client refuses to sleep through it and says so.
    reset = str(int(__import__("time").time()) + 3600)
    driver.fault(
        "GET", "/issues", 403, headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}, times=50
    )
    monkeypatch.setenv("GITHUB_TOKEN", "tok-reports")
    monkeypatch.setenv("GITHUB_API_URL", str(driver.sandbox.base_url).rstrip("/"))
    res = CliRunner().invoke(main, ["reports", "build", "--repo", REPO, "--out", str(tmp_path / "site")])
    assert res.exit_code == 2
    assert "nothing was changed" in res.output and "rate limited" in res.output
    assert not (tmp_path / "site" / "reports").exists()


def test_responses_match_githubs_schemas(sandbox: tuple[SandboxDriver, SandboxState]) -> None:
    import httpx

    driver, _ = sandbox
    n = driver.open_issue(REPO, "ada", "t", "b", labels=["experiment"])
    driver.comment(REPO, n, "ada", "hello")
    gs.require_specs()
    for path in (f"/repos/{REPO}/issues", f"/repos/{REPO}/issues/comments", f"/repos/{REPO}/pulls"):
        resp = httpx.get(
            str(driver.sandbox.base_url).rstrip("/") + path,
            params={"state": "all"},
            headers={"Authorization": "Bearer tok-reports"},
        )
        assert resp.status_code == 200
        _, op = gs.operation("GET", path)  # type: ignore[misc]
        schema = gs.response_schema(op, 200)
        assert schema is not None
        errors = [e.message for e in gs.validator(schema).iter_errors(resp.json())]
        assert errors == [], (path, errors[:3])
