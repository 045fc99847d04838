"""Reports index for 2,000 issues and execution pages for 500 launches (goal: under 10 s on 2 cores).

Generates a GitHub snapshot (2,000 experiment issues, 1,500 PRs, 6,000 comments) and 500 executor launch
records of 4 steps each in a temp store, then times `build_reports` + `write_reports` and
`write_execution_pages`. Usage: python benchmarks/bench_reports.py [--issues 2000] [--launches 500]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.reports.build import build_reports  # noqa: E402
from bot.reports.collect import Snapshot  # noqa: E402
from bot.reports.model import Overlay  # noqa: E402
from bot.reports.render import write_reports  # noqa: E402
from leaderboard.execution_pages import write_execution_pages  # noqa: E402
from runner.executor.dispatch import run_id  # noqa: E402
from tests.browse.records import write_launch  # noqa: E402

BOT = "openlab[bot]"


def snapshot(n: int) -> Snapshot:
    issues, pulls, comments = [], [], []
    for i in range(1, n + 1):
        labels = ["experiment" if i % 5 else "speedrun", "preregistered", f"topic:t{i % 12}"]
        body = "### Hypothesis\nh\n\n### Conclusion\nIt worked." if i % 3 == 0 else "### Hypothesis\nh"
        issues.append({"number": i, "title": f"Experiment {i}", "body": body, "state": "open", "labels": labels,
                       "html_url": f"https://github.com/lab/x/issues/{i}", "user": "ada", "created_at": "2026-11-01"})
        if i % 4:
            pr = n + i
            pulls.append({"number": pr, "title": f"exp{i}", "body": f"Preregistration: #{i}", "state": "open",
                          "merged_at": None, "html_url": f"https://github.com/lab/x/pull/{pr}", "head_ref": f"exp{i}-x"})
            rid = run_id("lab/x", pr, f"{i:040x}", f"experiments/exp{i}_x.py", 1)
            comments.append({"issue_number": pr, "user": BOT, "html_url": "",
                             "body": f"<!-- openlab:run:{rid} -->\nW&B https://wandb.ai/lab/openlab/runs/{rid}"})
            comments.append({"issue_number": pr, "user": "bob", "body": "/run", "html_url": ""})
        comments.append({"issue_number": i, "user": BOT, "body": "<!-- openlab:prereg:1 -->\nok", "html_url": ""})
    return Snapshot(repo="lab/x", html_url="https://github.com/lab/x", issues=issues, pulls=pulls, comments=comments)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--issues", type=int, default=2000)
    ap.add_argument("--launches", type=int, default=500)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    snap = snapshot(args.issues)
    store = str(tmp / "store")
    for i in range(args.launches):
        rid = run_id("lab/x", args.issues + i + 1, f"{i + 1:040x}", f"experiments/exp{i + 1}_x.py", 1)
        write_launch(store, rid, {"ingest": "succeeded", "tokenize": "succeeded", "filter": "running"})
    t0 = time.perf_counter()
    views, warnings = write_execution_pages(store, tmp / "site")
    t1 = time.perf_counter()
    groups = build_reports(snap, Overlay(), BOT, executions=[(v.run_id, v.experiment, v.status) for v in views])
    page = write_reports(groups, tmp / "site", "lab/x", snap.html_url)
    t2 = time.perf_counter()
    print(f"execution pages: {len(views)} launches in {t1 - t0:.2f} s ({len(warnings)} warnings)")
    print(f"reports index:   {sum(len(g.reports) for g in groups)} issues in {len(groups)} groups in {t2 - t1:.2f} s "
          f"({page.stat().st_size / 1e6:.1f} MB)")
    print(f"total:           {t2 - t0:.2f} s")


if __name__ == "__main__":
    main()
