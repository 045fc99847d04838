"""The data browser and execution pages in headless Chromium: DAG drawn, statuses right, paging, filter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaderboard.browse.app import create_app
from tests.browse.records import write_launch
from tests.browser import browser_page, screenshot, serve_app

pytestmark = pytest.mark.browser


@pytest.fixture
def store(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    rows = [
        {"id": i, "text": f"document {i} <em>not html</em>", "attributes": {"quality": i / 100}}
        for i in range(45)
    ]
    (tmp_path / "docs" / "shard.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_launch(
        str(tmp_path), "olr-live", {"ingest": "succeeded", "tokenize": "running", "filter": "failed"}
    )
    return tmp_path


def test_documents_page_and_filter(store: Path) -> None:
    with serve_app(create_app(str(store))) as base, browser_page() as (page, errors):
        page.goto(f"{base}/files?path=docs")
        page.click("text=shard.jsonl")
        assert page.locator("article.doc").count() == 20
        assert (
            page.locator("article.doc pre").first.inner_text().startswith("document 0 <em>")
        )  # shown as text
        page.click("#next")
        assert page.locator("article.doc").first.get_attribute("data-index") == "20"
        page.fill("#filter", "quality>=0.4")
        page.click("#apply")
        idx = [int(a.get_attribute("data-index")) for a in page.locator("article.doc").all()]
        assert idx == list(range(40, 45))
        screenshot(page, "browse-documents")
        assert errors == []


def test_execution_page_draws_the_dag(store: Path) -> None:
    with serve_app(create_app(str(store))) as base, browser_page() as (page, errors):
        page.goto(f"{base}/files?path=experiments")
        page.click("text=olr-live.json")
        nodes = page.locator("svg#dag g.node")
        assert nodes.count() == 4
        status = {n.get_attribute("data-identity"): n.get_attribute("data-status") for n in nodes.all()}
        assert status == {
            "ingest@v1": "succeeded",
            "tokenize@v1": "running",
            "filter@v1": "failed",
            "train@v1": "waiting",
        }
        assert page.locator("svg#dag path.edge").count() == 2
        box = page.locator("svg#dag").bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 40
        assert page.locator("meta[http-equiv=refresh]").count() == 1  # live: it refreshes while running
        page.click("a.outputs-link >> nth=0")
        assert "ingest" in page.url
        screenshot(page, "browse-execution")
        assert errors == []
