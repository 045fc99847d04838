"""The index opened as a file (the path the demo prints): the inlined table and chart, or a page saying how to serve."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import leaderboard.site as site_mod
from tests.browser import browser_page, chart_state
from tests.site.conftest import build_small_site

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="chromium not installed (make system-deps)"),
]


def test_index_as_file_shows_table_and_chart(small_site: Path) -> None:
    with browser_page() as (page, errors):
        page.goto((small_site / "index.html").as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=15000)
        rows = page.locator("#runs tbody tr[data-run]")
        assert rows.count() == 3
        assert chart_state(page)["points"] == 3
        # A track without runs says so instead of drawing an empty frame.
        page.click("#tab-sub_1_5")
        assert chart_state(page) is None and page.locator("#chart").is_hidden()
        assert page.locator("#chart-empty").inner_text() == "No runs with model FLOPs in this track."
        page.click("#tab-all")
        assert chart_state(page)["points"] == 3
        assert page.locator("#status").inner_text() == "3 runs"
        assert errors == []


def test_index_as_file_too_big_to_inline_says_how_to_serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(site_mod, "EMBED_MAX_BYTES", 0)
    out = build_small_site(tmp_path)
    assert 'id="table-data"' not in (out / "index.html").read_text()
    with browser_page() as (page, _):
        page.goto((out / "index.html").as_uri())
        note = page.locator("p.fallback")
        note.wait_for(timeout=15000)
        assert "openlab leaderboard serve" in note.inner_text()
        assert "opened as a file" in page.locator("#status").inner_text()
