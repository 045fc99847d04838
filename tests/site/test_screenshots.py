"""`openlab demo --screenshots` writes real PNGs of built pages (here: the small site's index and a run page)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from leaderboard.screenshots import take_screenshots
from runner.errors import OpenlabError

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="chromium not installed (make system-deps)"),
]


def test_screenshots_of_index_and_run_page(small_site: Path, tmp_path: Path) -> None:
    run = sorted((small_site / "runs").glob("*.html"))[0]
    shots = take_screenshots({"index": small_site / "index.html", "run": run}, tmp_path / "shots")
    assert [p.name for p in shots] == ["index.png", "run.png"]
    for p in shots:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000
    with pytest.raises(OpenlabError, match="missing.html does not exist"):
        take_screenshots({"x": tmp_path / "missing.html"}, tmp_path / "shots")
