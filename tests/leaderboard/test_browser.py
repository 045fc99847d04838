"""The built site in a real headless Chromium (Debian's package, driven by Playwright; nothing downloaded)."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from leaderboard.screenshots import CHROMIUM_ARGS
from leaderboard.site import BuildOptions, build_site
from leaderboard.tracks import DEFAULT_TRACKS
from tests.browser import chart_point, chart_state

CHROMIUM = "/usr/bin/chromium"
ARGS = CHROMIUM_ARGS
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "leaderboard"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="chromium not installed (make system-deps)"),
]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def served(tmp_path: Path, example_tree: Path, keypair) -> Iterator[str]:
    cwd = os.getcwd()
    os.chdir(example_tree)
    try:
        build_site(BuildOptions(sources=["experiments/**/results.json"], out=tmp_path / "site",
                                tracks=DEFAULT_TRACKS, public_pem=keypair[1], workers=1))
    finally:
        os.chdir(cwd)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(tmp_path / "site")))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()


def test_site_in_chromium(served: str) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        requested: list[str] = []
        page.on("request", lambda r: requested.append(r.url))
        page.goto(served + "index.html")
        page.wait_for_selector("body[data-ready='1']", timeout=10_000)

        # One chart point per run on the "all" tab, and a frontier line.
        chart = chart_state(page)
        assert chart["points"] == 12 and chart["line"] == 1 and chart["front"] >= 1
        assert chart["xtitle"] == "model FLOPs (log)" and chart["ytitle"] == "BPB" and chart["xticks"]
        assert all(t.startswith("1e") for t in chart["xticks"])
        assert page.locator("#runs tbody tr").count() == 12

        # Sorting: BPB descending after two clicks, ascending after one.
        def bpbs() -> list[float]:
            return [float(t) for t in page.locator("#runs tbody tr td:nth-child(11)").all_inner_texts()]

        assert bpbs() == sorted(bpbs())  # rank order on "all" is BPB ascending
        page.click("th button[data-key='bpb']")
        page.click("th button[data-key='bpb']")
        assert bpbs() == sorted(bpbs(), reverse=True)
        assert page.get_attribute("th:has(button[data-key='bpb'])", "aria-sort") == "descending"
        page.click("th button[data-key='name']")
        names = page.locator("#runs tbody tr td:nth-child(2) a:first-child").all_inner_texts()
        assert names == sorted(names, key=str.lower)

        # Filter.
        page.fill("#filter", "grace")
        page.wait_for_function("document.querySelectorAll('#runs tbody tr').length < 12")
        assert all("Grace" in t for t in page.locator("#runs tbody tr td:nth-child(3)").all_inner_texts())
        page.fill("#filter", "")
        page.wait_for_function("document.querySelectorAll('#runs tbody tr').length == 12")

        # Track tabs: the scaling tab shows its fit table and only its 4 runs.
        page.click("#tab-scaling")
        assert page.get_attribute("#tab-scaling", "aria-selected") == "true"
        assert page.locator("section.scaling").is_visible()
        assert page.locator("#runs tbody tr").count() == 4
        assert chart_state(page)["points"] == 4
        assert "adamw_scaling" in page.locator("section.scaling").inner_text()
        page.click("#tab-all")
        assert chart_state(page)["points"] == 12

        # Hardware-FLOPs axis, hover tooltip, click opens the run page.
        page.check("input[value='hardware_flops']")
        assert chart_state(page)["points"] == 12 and chart_state(page)["xtitle"] == "hardware FLOPs (log)"
        page.mouse.move(*chart_point(page))
        assert page.locator("#tip").is_visible() and "BPB" in page.locator("#tip").inner_text()
        page.screenshot(path=str(ARTIFACTS / "index.png"), full_page=True)
        assert page.locator(".badge.verified").count() >= 3
        with page.expect_navigation():
            page.mouse.click(*chart_point(page))
        assert "/runs/" in page.url and page.locator("h1").count() == 1
        page.screenshot(path=str(ARTIFACTS / "run.png"), full_page=True)

        # Phone width: still one column, no horizontal page overflow outside the scrollers.
        page.set_viewport_size({"width": 390, "height": 800})
        page.goto(served + "index.html")
        page.wait_for_selector("body[data-ready='1']")
        assert page.evaluate("document.documentElement.scrollWidth") <= 400
        browser.close()
    assert errors == []
    assert all(u.startswith(served) for u in requested), "the site must not load anything from the network"
    shutil.copyfile(ARTIFACTS / "index.png", ARTIFACTS / "leaderboard.png")
