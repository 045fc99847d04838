"""Adoption figures (issue 12): `openlab init` in an empty repository (goal < 2 s), `openlab doctor` against a
reachable local Ray and store (goal < 5 s), the wheel's size, and (with --install) the base install's time and
size in a fresh venv.

    .venv/bin/python benchmarks/bench_adopt.py [--repeat 3] [--install]

Times are wall clock of the real `openlab` command in a subprocess (interpreter start and imports included),
best of --repeat.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPENLAB = str(Path(sys.executable).parent / "openlab")


def timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    took = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return took


def bench_init(tmp: Path, repeat: int) -> float:
    best = float("inf")
    for i in range(repeat):
        repo = tmp / f"lab{i}"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        best = min(best, timed([OPENLAB, "init", "--private-key", str(tmp / f"key{i}.pem")], repo))
    return best


def bench_doctor(tmp: Path, repeat: int) -> float:
    from runner.executor.local_head import start_head

    head = start_head(num_cpus=1)
    try:
        env = {**os.environ, "RAY_ADDRESS": head.url, "RAY_AUTH_TOKEN": os.environ["RAY_AUTH_TOKEN"],
               "OPENLAB_STORAGE_PREFIX": str(tmp / "store"), "OPENLAB_LEDGER_URL": f"sqlite:///{tmp}/ledger.sqlite3"}
        rows = subprocess.run([OPENLAB, "doctor", "--repo", str(tmp / "lab0")], cwd=tmp, env=env,
                              capture_output=True, text=True).stdout
        print("  " + next(line for line in rows.splitlines() if line.startswith("Ray ")))
        return min(timed([OPENLAB, "doctor", "--repo", str(tmp / "lab0")], tmp, env) for _ in range(repeat))
    finally:
        head.stop()


def wheel(tmp: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(tmp / "dist"), str(ROOT)], check=True, capture_output=True)
    return next((tmp / "dist").glob("openlab-*.whl"))


def base_install(tmp: Path, whl: Path) -> tuple[float, int]:
    venv = tmp / "venv"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q", str(whl)], check=True, capture_output=True)
    took = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in venv.rglob("*") if p.is_file() and not p.is_symlink())
    return took, size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--install", action="store_true", help="also time a fresh base install (minutes)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-adopt-"))
    try:
        start = min(timed([OPENLAB, "--version"], tmp) for _ in range(args.repeat))
        print(f"openlab --version (interpreter + CLI start, the floor of every command): {start:.2f} s")
        print(f"openlab init, empty repository: {bench_init(tmp, args.repeat):.2f} s (goal < 2 s)")
        print(f"openlab doctor, local Ray + store: {bench_doctor(tmp, args.repeat):.2f} s (goal < 5 s)")
        whl = wheel(tmp)
        print(f"wheel: {whl.name}, {whl.stat().st_size / 1e6:.2f} MB")
        if args.install:
            took, size = base_install(tmp, whl)
            print(f"base install (fresh venv, wheel + base deps): {took:.0f} s, {size / 2**30:.2f} GiB")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
