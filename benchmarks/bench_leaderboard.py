"""Leaderboard build and page speed: N results across 10 tracks, then the index in headless Chromium.

    .venv/bin/python benchmarks/bench_leaderboard.py [--runs 10000] [--workers 2] [--repeat 5]

Prints one JSON object: cold build seconds (each build into a fresh output folder, every file parsed,
verified and rendered; min and median of ``--repeat`` builds), the CPU seconds those builds used (this
process plus its workers: the figure other jobs on a shared machine disturb least), the load average
around them, output sizes, and Chromium's time from navigation to an interactive table and chart.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "leaderboard"))

from factory import make_results, signed  # noqa: E402

from leaderboard.screenshots import CHROMIUM_ARGS  # noqa: E402
from leaderboard.site import BuildOptions, build_site  # noqa: E402
from leaderboard.tracks import DEFAULT_TRACKS, Track, Tracks  # noqa: E402
from runner import attest  # noqa: E402
from runner.schema import dumps_results  # noqa: E402

TRACKS = Tracks(
    tracks=[
        *DEFAULT_TRACKS.tracks,
        Track(id="budget_1e13", name="≤ 1e13 FLOPs", kind="flops_budget", max_flops=1e13),
    ]
)


def make_tree(root: Path, n: int) -> bytes:
    priv, pub = attest.generate_keypair()
    for i in range(n):
        r = make_results(i, attested=i % 4 == 0)
        if i % 4 == 0:
            r = signed(r, priv)
        d = root / "experiments" / "speedrun" / f"group_{i % 10}" / f"run_{i:05d}"
        d.mkdir(parents=True)
        (d / "results.json").write_text(dumps_results(r))
    return pub


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def browser_timing(site: Path) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/index.html"
    args = CHROMIUM_ARGS
    out: dict[str, float] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=args)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(url)  # warm the browser process once
        page.wait_for_selector("body[data-ready='1']", timeout=30_000)
        for attempt in range(3):
            page.goto("about:blank")
            t = time.perf_counter()
            page.goto(url)
            page.wait_for_selector("body[data-ready='1']", timeout=30_000)
            out[f"interactive_s_{attempt}"] = round(time.perf_counter() - t, 3)
        t = time.perf_counter()
        page.click("th button[data-key='model_flops']")
        out["sort_all_s"] = round(time.perf_counter() - t, 3)
        t = time.perf_counter()
        page.click("#tab-sub_3")
        out["switch_tab_s"] = round(time.perf_counter() - t, 3)
        out["points_on_all_tab"] = page.evaluate(
            "document.querySelector('#tab-all').click(), Chart.getChart(document.getElementById('chart')).data"
            ".datasets.filter(d => d.kind !== 'frontier').reduce((n, d) => n + d.data.length, 0)"
        )
        out["transferred_bytes"] = page.evaluate(
            "performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))"
            ".reduce((a, e) => a + (e.transferSize || e.encodedBodySize || 0), 0)"
        )
        browser.close()
    server.shutdown()
    return out


def _cpu_seconds() -> float:
    """User + system CPU of this process and of its reaped children (the build's forked workers)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5, help="cold builds to time (fresh folder each)")
    ap.add_argument("--no-browser", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pub = make_tree(root, a.runs)
        os.chdir(root)
        res: dict[str, object] = {"runs": a.runs, "tracks": len(TRACKS), "workers": a.workers,
                                  "cpus": len(os.sched_getaffinity(0)), "loadavg_before": os.getloadavg()}
        walls, cpus = [], []
        for k in range(a.repeat):
            out = root / f"site_{k}"
            cpu0, t = _cpu_seconds(), time.perf_counter()
            rep = build_site(BuildOptions(sources=["experiments/**/results.json"], out=out, tracks=TRACKS,
                                          public_pem=pub, workers=a.workers))
            walls.append(round(time.perf_counter() - t, 3))
            cpus.append(round(_cpu_seconds() - cpu0, 2))
        res |= {"build_cold_s": walls, "build_cold_min_s": min(walls),
                "build_cold_median_s": statistics.median(walls), "build_cpu_s": cpus,
                "loadavg_after": os.getloadavg()}
        assert rep.runs == a.runs, rep.warnings[:5]
        res["index_html_bytes"] = rep.index_bytes
        res["table_json_bytes"] = rep.table_bytes
        res["runs_json_bytes"] = (out / "runs.json").stat().st_size
        if not a.no_browser:
            res.update(browser_timing(out))
        print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
