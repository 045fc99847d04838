"""`openlab demo` end to end, reduced to a short training run: the whole lifecycle on embedded defaults, then the
built site's links from the results comment to the execution page, and from there to W&B and the code."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
OPENLAB = str(Path(sys.executable).parent / "openlab")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One short `openlab demo --screenshots` for the module: its work dir and what it printed."""
    work = tmp_path_factory.mktemp("demo") / "demo"
    proc = subprocess.run(
        [OPENLAB, "demo", "--workdir", str(work), "--steps", "20", "--screenshots", str(work / "screenshots")],
        capture_output=True,
        text=True,
        timeout=900,
        env={**__import__("os").environ, "COLUMNS": "120"},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return work, proc.stdout


def test_demo_runs_the_lifecycle_and_links_the_record(demo: tuple[Path, str]) -> None:
    work, out = demo
    for line in (
        "1. ada preregisters",
        "2. ada opens a pull request",
        "3. maria (maintainer) approves with /run",
        "5. The reconciler reports back",
        "Pareto update",
        "transcript:",
    ):
        assert line in out, line
    assert re.search(r"run olr-ada-tiny-pr\d+-[0-9a-f]{7}-a1-[0-9a-f]{10}: succeeded", out)

    transcript = (work / "transcript.html").read_text()
    assert "Preregistered" in transcript and "/run" in transcript and "Results: ada_tiny" in transcript
    # the Pareto section's chart, committed with the results, is shown from a copy next to the transcript
    [chart] = re.findall(r'<img src="(repo-files/[^"]+/pareto\.svg)" alt="BPB vs FLOPs', transcript)
    assert (work / chart).read_text().startswith("<?xml") and "sandbox.invalid" not in transcript.split("<body")[1]
    # results comment -> execution page (on the lab's site, next to the transcript)
    [href] = set(re.findall(r'href="(site/executions/[^"]+\.html)"', transcript))
    execution = work / href
    assert execution.is_file()
    page = execution.read_text()
    # execution page -> the code at its git SHA (and W&B, which the tests keep disabled: see test_links)
    assert re.search(
        r'href="https://github\.com/lab/openlab/blob/[0-9a-f]{40}/experiments/speedrun/ada_tiny/ada_tiny\.py"',
        page,
    )
    # ... and back to the pull request the run was approved on; no local account of the worker
    assert re.search(r'<a href="https://github\.com/lab/openlab/pull/\d+" id="pr-link">#\d+</a>', page)
    assert "<dt>by</dt>" not in page
    site = work / "site"
    assert (site / "index.html").is_file() and (site / "reports" / "index.html").is_file()
    runs = list((site / "runs").glob("*.html"))
    assert len(runs) == 1 and "verified" in runs[0].read_text()
    # the lab is a fresh repository made by `openlab init` (issue 12), not this project's tree
    lab = work / "lab-repo"
    assert (lab / ".github/openlab-init.json").is_file() and (lab / "experiments/exp0_example.py").is_file()
    assert (work / "signing-key.pem").is_file() and not list(lab.rglob("*signing-key*"))


@pytest.mark.browser
def test_every_page_of_the_demo_site_reads_right(demo: tuple[Path, str]) -> None:
    """Each page of the demo's site and the transcript, opened as files in Chromium the way the demo says: no
    script error, no local path of the machine, the preregistration's credit and the links back; and the
    screenshots `make demo` writes for reviewers."""
    from tests.browser import browser_page

    work, out = demo
    site = work / "site"
    pages = sorted(site.rglob("*.html")) + [work / "transcript.html"]
    assert len(pages) >= 8, pages
    with browser_page() as (page, errors):
        for html in pages:
            page.goto(html.as_uri())
            page.wait_for_load_state("load")
            if page.locator("#boot").count():
                page.wait_for_selector("body[data-ready='1']", timeout=15000)
            source = page.content()
            for local in (str(work), "/tmp/", "/root/", "/home/"):
                assert local not in source, (html.relative_to(work), local)
        assert not errors, errors
        page.goto((site / "index.html").as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=15000)
        row = page.locator("#runs tbody tr").first.inner_text()
        assert "Ada Lovelace" in row and "ada_tiny" in row
        [run_page] = (site / "runs").glob("*.html")
        page.goto(run_page.as_uri())
        text = page.locator("main").inner_text()
        assert "Ada Lovelace" in text and "rank 1 of 1" in text
        for name in ("PR #", "preregistration #"):
            assert page.get_by_role("link", name=re.compile(name)).count(), name
    shots = sorted(p.name for p in (work / "screenshots").glob("*.png"))
    assert shots == ["execution.png", "index.png", "run.png", "transcript.png"], out
    for p in (work / "screenshots").glob("*.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000
