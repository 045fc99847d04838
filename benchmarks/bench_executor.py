"""Executor overhead: a 200-step graph of no-op steps on the embedded Ray, and `openlab plan` on it.

    .venv/bin/python benchmarks/bench_executor.py [--steps 200] [--width 10]

Per step, the executor takes a lease, writes RUNNING, the step record, SUCCESS, releases the lease and runs one
Ray task; the launcher rewrites the experiment record. The figure reported is the median, over all steps, of
launch-to-done time as the launcher sees it (experiment record ``started_at`` -> ``finished_at``), plus the
whole graph's wall time divided by the step count. Ray's start-up is excluded and reported on its own.
Goals (issue 3): median per-step overhead < 0.5 s, `openlab plan` < 2 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GRAPH = '''
from runner.executor import Step


def noop(cfg, ctx):
    return None


STEPS = []
prev = []
for layer in range({layers}):
    cur = [
        Step(f"bench/l{{layer:03d}}/s{{i:02d}}", noop, {{"layer": layer, "i": i}}, deps=tuple(prev[i:i + 1]))
        for i in range({width})
    ]
    STEPS.extend(cur)
    prev = cur
'''


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--width", type=int, default=10)
    args = ap.parse_args()
    layers = args.steps // args.width
    work = Path(tempfile.mkdtemp(prefix="openlab-bench-"))
    exp = work / "bench_graph.py"
    exp.write_text(GRAPH.format(layers=layers, width=args.width))
    prefix = work / "store"

    openlab = str(Path(sys.executable).parent / "openlab")
    plan_times = []
    for _ in range(3):
        t = time.perf_counter()
        out = subprocess.run([openlab, "plan", str(exp), "--prefix", str(prefix)], capture_output=True, check=True)
        plan_times.append(time.perf_counter() - t)
    n_plan = len(json.loads(out.stdout)["steps"])

    from runner.executor import RunOptions, ray_env, run_experiment

    t = time.perf_counter()
    ray_env.connect(None)
    ray_start = time.perf_counter() - t

    opts = RunOptions(log=lambda _m: None)
    t = time.perf_counter()
    report = run_experiment(exp, str(prefix), run_id="bench-1", options=opts)
    wall = time.perf_counter() - t
    assert report.ok, report.failures
    per_step = [(s.finished_at - s.started_at).total_seconds() for s in report.record.steps]  # type: ignore[operator]

    t = time.perf_counter()
    again = run_experiment(exp, str(prefix), run_id="bench-2", options=opts)
    skip_wall = time.perf_counter() - t
    assert {s.outcome for s in again.record.steps} == {"skipped"}
    ray_env.shutdown()

    result = {
        "steps": len(per_step),
        "plan_steps": n_plan,
        "openlab_plan_s_median": round(statistics.median(plan_times), 3),
        "ray_start_s": round(ray_start, 2),
        "run_wall_s": round(wall, 2),
        "run_wall_per_step_s": round(wall / len(per_step), 3),
        "per_step_overhead_s_median": round(statistics.median(per_step), 3),
        "per_step_overhead_s_p90": round(sorted(per_step)[int(0.9 * len(per_step))], 3),
        "relaunch_all_skipped_s": round(skip_wall, 2),
        "max_concurrent": opts.max_concurrent,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
