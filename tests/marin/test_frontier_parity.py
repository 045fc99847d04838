"""Frontier, band ranking and scaling cut-off against Marin's site code on Marin's real 96 runs.

``marin_site_*`` below transcribe marin-community/speedrun ``website/src/hooks/useSpeedrunData.ts`` and
``App.tsx`` (``computeParetoFront``, the band filter and sort, ``MIN_SCALING_LEADERBOARD_FLOPS``) over the
raw ``data/runs.json``; openlab's answers come through the whole path: import, load, site build.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from leaderboard.frontier import pareto_frontier
from leaderboard.load import load_runs
from leaderboard.marin_import import import_results
from leaderboard.tracks import MARIN_TRACKS
from runner.cli import main

RUNS_JSON = Path(__file__).parent / "fixtures" / "speedrun" / "data" / "runs.json"
RAW: list[dict] = json.loads(RUNS_JSON.read_text())
AXES = {"model_flops": "model_flops", "hardware_flops": "training_hardware_flops"}


def marin_site_pareto(runs: list[dict], x: str) -> list[str]:
    ordered = sorted(runs, key=lambda r: r[x])  # Array.prototype.sort is stable, as sorted() is
    best, out = float("inf"), []
    for r in ordered:
        if r["eval_paloma_c4_en_bpb"] < best:
            best = r["eval_paloma_c4_en_bpb"]
            out.append(r["run_name"])
    return out


def marin_site_band(runs: list[dict], track_id: str) -> list[str]:
    bands = sorted((t for t in MARIN_TRACKS if t.target_bpb), key=lambda t: -t.target_bpb)
    i = next(k for k, t in enumerate(bands) if t.id == track_id)
    upper, lower = bands[i].target_bpb, bands[i + 1].target_bpb if i + 1 < len(bands) else 0
    members = [r for r in runs if lower < r["eval_paloma_c4_en_bpb"] <= upper]
    return [r["run_name"] for r in sorted(members, key=lambda r: r["eval_paloma_c4_en_bpb"])]


def marin_site_scaling_groups(runs: list[dict]) -> set[str]:
    groups: dict[str, list[dict]] = {}
    for r in runs:
        if "/" in r["run_name"]:
            groups.setdefault(r["run_name"].rsplit("/", 1)[0], []).append(r)
    return {g for g, rs in groups.items() if any(r["training_hardware_flops"] > 3e20 for r in rs)}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imported")
    report = import_results(RUNS_JSON.parent.parent, out, repo="marin-community/speedrun")
    assert report.imported == len(RAW) == 96 and report.failed == 0
    return out


def test_frontier_rule_matches_marin_site_on_its_runs(imported: Path) -> None:
    loaded = load_runs(str(imported))
    assert not [w for w in loaded.warnings if "skipped" in w]
    runs = [r.results for r in loaded.runs]
    for ours, theirs in AXES.items():
        expected = marin_site_pareto(RAW, theirs)
        assert [r.name for r in pareto_frontier(runs, ours)] == expected  # type: ignore[arg-type]
    assert len(marin_site_pareto(RAW, "model_flops")) == 39
    assert len(marin_site_pareto(RAW, "training_hardware_flops")) == 27
    # The named alternative keeps fewer: whole scaling suites share one FLOPs value.
    assert len(pareto_frontier(runs, "model_flops", rule="dominance")) == 24


def test_site_frontier_bands_and_scaling_cutoff_match_marin(imported: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    res = CliRunner().invoke(
        main, ["leaderboard", "build", "--results", str(imported), "--out", str(site), "--tracks", "marin"]
    )
    assert res.exit_code == 0, res.output
    frontier = json.loads((site / "tracks" / "all" / "frontier.json").read_text())
    names = {r["run_id"]: r["name"] for ax in AXES for r in frontier[ax]}
    for ours, theirs in AXES.items():
        assert [names[r["run_id"]] for r in frontier[ours]] == marin_site_pareto(RAW, theirs)
    table = json.loads((site / "data" / "table.json").read_text())
    bands = [t for t in table["tracks"] if t["id"].startswith("llama_")]
    assert len(bands) == 4
    for t in bands:  # members in rank order: Marin's table sorts a band by BPB
        assert [table["rows"][i][1] for i in t["members"]] == marin_site_band(RAW, t["id"])
    index = (site / "index.html").read_text()
    groups = index.split('<table class="groups">', 1)[1].split("</table>", 1)[0]
    listed = set(re.findall(r"<td>\d+</td><td>([^<]+)</td><td>\d+</td><td>", groups))
    expected = marin_site_scaling_groups(RAW)
    assert expected and listed == expected


@pytest.mark.browser
def test_imported_frontier_in_chromium(imported: Path, tmp_path: Path) -> None:
    """The built site, in a real browser: Marin's frontier drawn, its points marked imported, no script error."""
    import threading
    from functools import partial
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    from leaderboard.site import BuildOptions, build_site
    from tests.browser import browser_page, chart_state

    build_site(BuildOptions(sources=[str(imported)], out=tmp_path / "site", tracks=MARIN_TRACKS, workers=1))

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(tmp_path / "site")))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with browser_page() as (page, errors):
            page.goto(f"http://127.0.0.1:{server.server_port}/index.html")
            page.wait_for_selector("body[data-ready='1']")
            chart = chart_state(page)
            assert chart["front_imported"] == 39 and chart["imported"] == chart["points"] == len(RAW)
            assert page.locator("#runs tbody .badge.imported").count() > 0
            assert errors == []
    finally:
        server.shutdown()
