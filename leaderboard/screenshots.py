"""PNG screenshots of built pages in headless Chromium (Debian's package via Playwright; nothing downloaded).

Used by `openlab demo --screenshots DIR` so a reviewer can look at the index, a run page, an execution page and
the PR transcript without a browser. Pages are opened as files: the site works offline (data inlined).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from runner.errors import OpenlabError

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def take_screenshots(pages: dict[str, Path], out: Path, width: int = 1280, height: int = 900) -> list[Path]:
    """One full-page ``<name>.png`` in ``out`` per (name, HTML file); returns the written paths."""
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        raise OpenlabError("screenshots need Chromium: run `make system-deps` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            for name, html in pages.items():
                if not html.is_file():
                    raise OpenlabError(f"screenshot {name}: {html} does not exist")
                page.goto(html.resolve().as_uri())
                page.wait_for_load_state("load")
                if page.locator("body[data-ready]").count() == 0 and page.locator("#boot").count():
                    page.wait_for_selector("body[data-ready='1']", timeout=15000)
                path = out / f"{name}.png"
                page.screenshot(path=str(path), full_page=True)
                written.append(path)
        finally:
            browser.close()
    return written
