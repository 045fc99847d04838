from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from conftest import write
from factory import make_results


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def test_serve_rebuilds_on_change(tmp_path: Path) -> None:
    root = tmp_path / "experiments" / "speedrun"
    write(root, "a", make_results(1))
    port = _port()
    exe = Path(sys.executable).parent / "openlab"
    proc = subprocess.Popen(
        [str(exe), "leaderboard", "serve", "--out", "site", "--port", str(port), "--interval", "0.2"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}/"
        deadline = time.time() + 30
        while True:
            try:
                assert "run-0-00001" in _get(base + "runs.json")
                break
            except OSError:
                assert time.time() < deadline and proc.poll() is None, "server did not come up"
                time.sleep(0.2)
        write(root, "b", make_results(2))
        deadline = time.time() + 30
        while "run-0-00002" not in _get(base + "runs.json"):
            assert time.time() < deadline, "no rebuild after a new results file"
            time.sleep(0.2)
        assert "Runs" in _get(base + "index.html")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert os.path.isdir(tmp_path / "site")
