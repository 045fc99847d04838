"""Executor test fixtures: an embedded Ray in this process, a `ray start --head` cluster, experiment files."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# Loopback only, token auth, no usage stats (see runner.executor.ray_env), short leases. Set for this folder's
# tests only and restored after, so other suites see the environment they expect.
_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_AUTH_MODE": "token",
    "RAY_AUTH_TOKEN": os.environ.get("RAY_AUTH_TOKEN") or secrets.token_hex(24),
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "OPENLAB_HEARTBEAT_S": "0.5",
    "OPENLAB_LEASE_TIMEOUT_S": "3",
}

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[3]
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="package", autouse=True)
def executor_env() -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in [*_ENV, "RAY_ADDRESS"]}
    os.environ.update(_ENV)
    os.environ.pop("RAY_ADDRESS", None)  # tests choose their Ray explicitly
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="package")
def ray_local(executor_env: None) -> Iterator[None]:
    """Embedded Ray in the test process, through the executor's own connect()."""
    from runner.executor import ray_env

    ray_env.connect(None, num_cpus=2)
    yield
    ray_env.shutdown()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="package")
def ray_head(executor_env: None) -> Iterator[str]:
    """A real `ray start --head --block` on 127.0.0.1 with token auth and a Jobs API; yields the dashboard URL."""
    gcs, dash = _free_port(), _free_port()
    temp = Path(
        tempfile.mkdtemp(prefix="olray", dir="/tmp")
    )  # short: Ray's unix socket paths are length-limited
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("RAY_ADDRESS", None)
    cmd = [
        str(VENV_BIN / "ray"), "start", "--head", "--block", "--num-cpus=2",
        "--node-ip-address=127.0.0.1", f"--port={gcs}", "--dashboard-host=127.0.0.1", f"--dashboard-port={dash}",
        "--disable-usage-stats", "--include-dashboard=true", f"--temp-dir={temp}",
        # Every port explicit: another Ray on this machine (the embedded one, other suites') must not collide.
        f"--dashboard-agent-listen-port={_free_port()}", f"--dashboard-agent-grpc-port={_free_port()}",
        f"--metrics-export-port={_free_port()}", f"--runtime-env-agent-port={_free_port()}",
        f"--ray-client-server-port={_free_port()}", f"--node-manager-port={_free_port()}",
        f"--object-manager-port={_free_port()}",
    ]  # fmt: skip
    log = open(temp / "ray-start.log", "w")  # noqa: SIM115 - closed in teardown
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{dash}"
    deadline = time.monotonic() + 90
    from ray.job_submission import JobSubmissionClient

    while True:
        try:
            JobSubmissionClient(url).list_jobs()
            break
        except Exception:
            if proc.poll() is not None or time.monotonic() > deadline:
                log.close()
                raise RuntimeError(
                    "ray head did not start: " + (temp / "ray-start.log").read_text()[-2000:]
                ) from None
            time.sleep(1)
    yield url
    os.killpg(proc.pid, signal.SIGTERM)  # `ray start --block` stops the processes it started
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    time.sleep(1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # whatever of that group is left
    log.close()
    shutil.rmtree(temp, ignore_errors=True)


def write_chain(dst: Path, **settings: object) -> Path:
    """Write the diamond experiment to ``dst`` with SETTINGS replaced (log, fail, sleep)."""
    import json

    text = (FIXTURES / "chain.py").read_text()
    full = {"log": None, "fail": [], "sleep": {}, **settings}
    lines = [
        f"SETTINGS: dict = {json.dumps(full).replace('null', 'None')}  # settings-line"
        if ln.endswith("# settings-line")
        else ln
        for ln in text.splitlines()
    ]
    dst.write_text("\n".join(lines) + "\n")
    return dst


@pytest.fixture
def chain_file(tmp_path: Path) -> Path:
    """A copy of the diamond experiment, so each test has its own module and file."""
    return write_chain(tmp_path / "chain.py", log=str(tmp_path / "calls.jsonl"))
