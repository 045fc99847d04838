"""Executor test fixtures: an embedded Ray in this process, a `ray start --head` cluster, experiment files."""

from __future__ import annotations

import os
import secrets
import socket
import sys
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
    from runner.executor.local_head import start_head

    head = start_head(num_cpus=2)
    yield head.url
    head.stop()


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
