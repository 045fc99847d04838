"""A run page as a reader sees it: the four curves with ticks and labelled axes; no local path, no command line."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from leaderboard.pages import public_source
from tests.browser import browser_page

browser = pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="chromium not installed")


def test_public_source_drops_the_machines_folders() -> None:
    assert public_source("experiments/a/results.json") == "experiments/a/results.json"
    assert public_source("/tmp/pytest-1/x/experiments/a/results.json") == "a/results.json"
    assert public_source("https://host/p/a/results.json") == "a/results.json"


CHARTS = """() => Array.from(document.querySelectorAll('canvas.curve')).map(c => {
    const ch = Chart.getChart(c);
    return {title: c.dataset.title, sets: ch.data.datasets.map(d => d.label), x: ch.options.scales.x.title.text,
            y: ch.options.scales.y.title.text, xticks: ch.scales.x.ticks.map(t => t.label),
            yticks: ch.scales.y.ticks.map(t => t.label)};
})"""


@pytest.mark.browser
@browser
def test_run_page_draws_its_curves_and_overlays_others(small_site: Path) -> None:
    page_path = small_site / "runs" / "run-0-00000.html"
    html = page_path.read_text()
    assert str(small_site.parent) not in html and "/tmp/" not in html
    with browser_page() as (page, errors):
        page.goto(page_path.as_uri())
        charts = page.evaluate(CHARTS)
        assert [c["title"] for c in charts] == ["Training loss", "Eval BPB", "Learning rate", "Gradient norm"]
        loss = charts[0]
        assert loss["x"] == "step" and loss["y"] == "loss (nats/token)" and loss["sets"] == ["Run 0 (this run)"]
        assert loss["xticks"][:3] == ["0", "20", "40"] and len(loss["yticks"]) >= 3
        assert "command" not in page.locator("table.kv").all_inner_texts()[-2]
        # Overlay: the other run of the track that logged curves is offered; ticking draws it, unticking removes it.
        page.locator("#overlay summary").click()
        boxes = page.locator("#overlay input[type=checkbox]")
        assert boxes.count() == 1 and "Run 1" in page.locator("#overlay label").first.inner_text()
        boxes.first.check()
        page.wait_for_function("Chart.getChart(document.querySelector('canvas.curve')).data.datasets.length == 2")
        assert all(c["sets"] == ["Run 0 (this run)", "Run 1"] for c in page.evaluate(CHARTS))
        boxes.first.uncheck()
        assert all(len(c["sets"]) == 1 for c in page.evaluate(CHARTS))
        assert errors == []


@pytest.mark.browser
@browser
def test_ranks_on_run_pages_agree_with_the_index(small_site: Path) -> None:
    with browser_page() as (page, errors):
        page.goto((small_site / "index.html").as_uri())
        page.wait_for_selector("body[data-ready='1']")
        index = {}
        for tr in page.locator("#runs tbody tr").all():
            rank, link = tr.locator("td").first.inner_text(), tr.locator("td a").first.get_attribute("href")
            index[link] = int(rank)
        assert sorted(index.values()) == [1, 2, 3]
        for link, rank in index.items():
            page.goto((small_site / link).as_uri())
            ranks = page.locator("ul.ranks li").all_inner_texts()
            assert f"All runs: rank {rank} of {len(index)}" in ranks, (link, ranks)
        assert errors == []


def test_no_page_loads_a_script_from_the_network(small_site: Path) -> None:
    pages = list(small_site.rglob("*.html"))
    assert pages and (small_site / "vendor" / "chart.umd.min.js").is_file()
    for p in pages:
        for src in re.findall(r'<script[^>]*\ssrc="([^"]+)"', p.read_text()):
            assert "://" not in src and not src.startswith("//"), (p, src)
