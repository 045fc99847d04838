"""Run every ``benchmarks/bench_*.py`` with its default arguments, one after another (``make bench``).

Each script prints its own figures; this only runs them in a fresh process each (so one's imports and caches do
not speed up the next) and says which failed. Record figures in benchmarks/README.md by hand, with the machine.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    here = Path(__file__).resolve().parent
    only = set(sys.argv[1:])  # e.g. `run_all.py bench_adopt` runs just that one
    failed = []
    for script in sorted(here.glob("bench_*.py")):
        if only and script.stem not in only:
            continue
        print(f"\n=== {script.name}", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.run([sys.executable, str(script)], cwd=here.parent).returncode
        print(f"=== {script.name}: exit {rc} in {time.perf_counter() - t0:.1f} s", flush=True)
        if rc != 0:
            failed.append(script.name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
