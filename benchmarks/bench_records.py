"""What reproductions, records and scaling suites add to the leaderboard build (issue 14).

    .venv/bin/python benchmarks/bench_records.py [--runs 10000] [--suites 1000] [--repeat 3] [--workers 2]

Writes ``--runs`` results files as members of ``--suites`` scaling suites (``method<k>__m<j>``) and one signed
3-seed ``reproduction.json`` per suite, then in one process, alternating: the site build without the issue-14
pages (``leaderboard.site._records_and_suites`` replaced by a no-op) and the full build (record pages, records
feed, suites page with every fit), plus the bot's aggregate and significance work for every reproduction
(``summarize``, ``judge``, ``decide_record`` against the records so far). Prints one JSON object; the figure is
``added_ratio`` = (full - base + aggregate) / base, from the fastest of ``--repeat`` rounds of each, and, less
sensitive to a busy machine, ``added_ratio_timed`` = (time inside the records-and-suites step + aggregate) /
(full build - that time), both measured inside the same full build.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "leaderboard"))

from factory import make_results  # noqa: E402

import leaderboard.site as site  # noqa: E402
from bot.runs.reproductions import decide_record, judge  # noqa: E402
from leaderboard.tracks import DEFAULT_TRACKS  # noqa: E402
from runner import attest  # noqa: E402
from runner.reproduction import RecordDecision, Reproduction, SeedRun, sign_reproduction  # noqa: E402
from runner.schema import dumps_results  # noqa: E402
from runner.stats import summarize  # noqa: E402


def make_tree(root: Path, runs: int, suites: int) -> tuple[bytes, list[list[float]]]:
    priv, pub = attest.generate_keypair()
    per = max(1, runs // suites)
    rng = random.Random(0)
    seeds_of: list[list[float]] = []
    for i in range(runs):
        k, j = divmod(i, per)
        flops = 1e12 * 10 ** (j / 2)
        r = make_results(i, model_flops=flops, bpb=(20 + k % 7) * flops ** -0.1 + 0.8 + rng.uniform(0, 0.01),
                         name=f"method{k}__m{j}", run_id=f"run-{i}")
        d = root / "results" / f"method{k}" / f"m{j}"
        d.mkdir(parents=True)
        (d / "results.json").write_text(dumps_results(r))
    base = datetime(2026, 1, 1, tzinfo=UTC)
    for k in range(suites):
        bpbs = [3.3 - k * 1e-4 + rng.gauss(0, 0.005) for _ in range(3)]
        seeds_of.append(bpbs)
        doc = Reproduction(
            run_id=f"olr-rep-{k}", repo="lab/x", pr=k, sha=f"{k:040x}", experiment=f"experiments/speedrun/m{k}/m.py",
            name=f"method{k}", track=f"track{k % 10}", author=f"user{k}", requested_by="maint",
            seeds=[SeedRun(seed=s, step=f"s{s}", outcome="succeeded", bpb=b, model_flops=1e15)
                   for s, b in enumerate(bpbs)],
            summary=summarize(bpbs), model_flops=1e15, tolerance_bpb=0.01, reproduces=True, verdict="reproduced",
            record=RecordDecision(accepted=k % 3 == 0, reason="bench", threshold=0.01),
            links={"pr": f"https://github.com/lab/x/pull/{k}"}, created_at=base + timedelta(hours=k))
        d = root / "reproductions" / doc.run_id
        d.mkdir(parents=True)
        (d / "reproduction.json").write_text(sign_reproduction(doc, priv).model_dump_json())
    (root / "lab.pub").write_bytes(pub)
    return pub, seeds_of


def aggregate(seeds_of: list[list[float]]) -> float:
    """The bot's work per reproduction: summary, verdict and the record decision against the records so far."""
    t0 = time.perf_counter()
    records: list[Reproduction] = []
    now = datetime.now(UTC)
    for k, bpbs in enumerate(seeds_of):
        summary, ok, why = judge(bpbs, None, 0.05)
        dec = decide_record(bpbs, 1e15, f"track{k % 10}", records, 0.01)
        if dec.accepted:
            records.append(Reproduction(
                run_id=f"r{k}", repo="lab/x", pr=k, sha="0" * 40, experiment="e.py", name="m", track=f"track{k % 10}",
                author="a", requested_by="m", seeds=[SeedRun(seed=i, step="s", outcome="succeeded", bpb=b,
                                                             model_flops=1e15) for i, b in enumerate(bpbs)],
                summary=summary, model_flops=1e15, tolerance_bpb=0.05, reproduces=ok, verdict=why, record=dec,
                created_at=now))
    return time.perf_counter() - t0


HOOK_S: list[float] = []


def build(root: Path, pub: bytes, workers: int, full: bool) -> float:
    hook = site._records_and_suites

    def timed(*a: object, **k: object) -> None:
        t0 = time.perf_counter()
        hook(*a, **k)  # type: ignore[arg-type]
        HOOK_S.append(time.perf_counter() - t0)

    site._records_and_suites = timed if full else (lambda *a, **k: None)  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory() as out:
            opts = site.BuildOptions(sources=[str(root / "results" / "**" / "results.json")], out=Path(out) / "s",
                                     tracks=DEFAULT_TRACKS, public_pem=pub, workers=workers,
                                     reproductions=[str(root / "reproductions")] if full else [])
            t0 = time.perf_counter()
            site.build_site(opts)
            return time.perf_counter() - t0
    finally:
        site._records_and_suites = hook


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--suites", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pub, seeds_of = make_tree(root, args.runs, args.suites)
        base, full, agg = [], [], []
        for _ in range(args.repeat):
            base.append(build(root, pub, args.workers, full=False))
            full.append(build(root, pub, args.workers, full=True))
            agg.append(aggregate(seeds_of))
    b, f, a, h = min(base), min(full), min(agg), min(HOOK_S)
    print(json.dumps({"runs": args.runs, "suites": args.suites, "reproductions": args.suites,
                      "base_build_s": round(b, 3), "full_build_s": round(f, 3), "aggregate_s": round(a, 4),
                      "records_and_suites_s": round(h, 4), "added_ratio": round((f - b + a) / b, 4),
                      "added_ratio_timed": round((h + a) / (f - h), 4), "loadavg": os.getloadavg()}))


if __name__ == "__main__":
    main()
