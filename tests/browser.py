"""Shared support for browser tests: Debian's Chromium driven by Playwright, and a loopback server.

Playwright never downloads a browser here: it is pointed at /usr/bin/chromium (installed by `make test`'s
system-deps target). The flags keep Chromium off the network, which this machine does not have.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.ingress.serving import ServedApp
from leaderboard.screenshots import CHROMIUM_ARGS

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = CHROMIUM_ARGS  # the flags the screenshots use: one list keeps Chromium off the network everywhere
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


@contextlib.contextmanager
def browser_page() -> Iterator[tuple[Any, list[str]]]:
    """A fresh page and the list of console errors (and page errors) it collects."""
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is not installed: run `make system-deps` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            yield page, errors
        finally:
            browser.close()


@contextlib.contextmanager
def serve_app(app: Any) -> Iterator[str]:
    """Run an ASGI app with uvicorn on a free loopback port for the block; yields its base URL."""
    with ServedApp(app) as served:
        yield served.url


def screenshot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


# The index's Pareto chart (Chart.js on canvas), read back the way a test needs it.
CHART_STATE = """() => {
  const c = Chart.getChart(document.getElementById('chart'));
  if (!c) return null;
  const pts = c.data.datasets.filter(d => d.kind !== 'frontier').flatMap(d => d.data);
  return {points: pts.length, front: pts.filter(p => p.front).length, imported: pts.filter(p => p.imported).length,
          front_imported: pts.filter(p => p.front && p.imported).length,
          line: c.data.datasets.filter(d => d.kind === 'frontier' && d.data.length).length,
          xticks: c.scales.x.ticks.map(t => t.label).filter(Boolean), xtitle: c.options.scales.x.title.text,
          ytitle: c.options.scales.y.title.text};
}"""


def chart_state(page: Any) -> dict[str, Any] | None:
    return page.evaluate(CHART_STATE)


def chart_point(page: Any) -> tuple[float, float]:
    """Page coordinates of the first plotted run of the index chart (to hover or click it)."""
    return tuple(page.evaluate("""() => {
      const c = Chart.getChart(document.getElementById('chart'));
      const i = c.data.datasets.findIndex(d => d.kind !== 'frontier' && d.data.length);
      const el = c.getDatasetMeta(i).data[0], box = c.canvas.getBoundingClientRect();
      return [box.left + el.x, box.top + el.y];
    }"""))
