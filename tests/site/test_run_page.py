"""A run page as a reader sees it: the four curves with ticks and labelled axes; no local path, no command line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from leaderboard.pages import _nice_ticks, public_source
from tests.browser import browser_page

browser = pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="chromium not installed")


def test_nice_ticks_are_round_and_cover_the_range() -> None:
    assert _nice_ticks(0, 200) == [0, 50, 100, 150, 200]
    assert _nice_ticks(1.63, 4.9) == pytest.approx([2, 3, 4])
    assert _nice_ticks(6e-6, 3e-4) == pytest.approx([1e-4, 2e-4, 3e-4])


def test_public_source_drops_the_machines_folders() -> None:
    assert public_source("experiments/a/results.json") == "experiments/a/results.json"
    assert public_source("/tmp/pytest-1/x/experiments/a/results.json") == "a/results.json"
    assert public_source("https://host/p/a/results.json") == "a/results.json"


@pytest.mark.browser
@browser
def test_run_page_curves_ticks_and_no_local_path(small_site: Path) -> None:
    page_path = next(p for p in sorted((small_site / "runs").glob("*.html")) if "Training loss" in p.read_text())
    html = page_path.read_text()
    assert str(small_site.parent) not in html and "/tmp/" not in html
    with browser_page() as (page, errors):
        page.goto(page_path.as_uri())
        titles = page.locator("article.run h2").all_inner_texts()
        for t in ("Training loss", "Eval BPB", "Learning rate", "Gradient norm"):
            assert t in titles
        charts = page.locator("svg.curve")
        assert charts.count() == 4
        first = charts.nth(0)
        assert first.locator("text.xtick").all_text_contents()[:3] == ["0", "50", "100"]
        assert len(first.locator("text.ytick").all_text_contents()) >= 3
        assert first.locator("text.xlabel").text_content() == "step"
        assert "command" not in page.locator("table.kv").all_inner_texts()[-2]
        assert errors == []
