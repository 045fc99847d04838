"""A local Ray head with the Jobs API: `ray start --head --block` on 127.0.0.1, for the demo and the tests.

The same secure defaults as the embedded Ray (:func:`runner.executor.ray_env.secure_local_env`: loopback only,
token auth, usage stats off), every port chosen free and explicit so several heads on one machine never collide,
and a short temp dir (Ray's unix socket paths are length-limited). ``stop()`` ends the whole process group.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

from runner.executor.ray_env import RayConnectError, job_env, secure_local_env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalHead:
    """A running head; ``url`` is the dashboard / Jobs API address to pass as ``--ray`` or RAY_ADDRESS."""

    def __init__(self, proc: subprocess.Popen[bytes], url: str, temp: Path, log: IO[str]) -> None:
        self.proc, self.url, self.temp, self._log = proc, url, temp, log

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)  # `ray start --block` stops what it started
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        time.sleep(1)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # whatever of the group is left
        self._log.close()
        shutil.rmtree(self.temp, ignore_errors=True)

    def __enter__(self) -> LocalHead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_head(num_cpus: int = 2, timeout_s: float = 90.0) -> LocalHead:
    """Start a head and wait until its Jobs API answers; RayConnectError with the log tail if it does not."""
    bin_dir = Path(sys.executable).parent
    # the head starts every job's driver: it gets no bot secret (jobs run approved PR code)
    env = job_env({**os.environ, **secure_local_env(), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"})
    os.environ.update(secure_local_env())  # our own Jobs API client must present the same token
    env.pop("RAY_ADDRESS", None)
    temp = Path(tempfile.mkdtemp(prefix="olray", dir="/tmp"))
    dash = free_port()
    cmd = [
        str(bin_dir / "ray"), "start", "--head", "--block", f"--num-cpus={num_cpus}",
        "--node-ip-address=127.0.0.1", f"--port={free_port()}", "--dashboard-host=127.0.0.1",
        f"--dashboard-port={dash}", "--disable-usage-stats", "--include-dashboard=true", f"--temp-dir={temp}",
        f"--dashboard-agent-listen-port={free_port()}", f"--dashboard-agent-grpc-port={free_port()}",
        f"--metrics-export-port={free_port()}", f"--runtime-env-agent-port={free_port()}",
        f"--ray-client-server-port={free_port()}", f"--node-manager-port={free_port()}",
        f"--object-manager-port={free_port()}",
    ]  # fmt: skip
    log = open(temp / "ray-start.log", "w")  # noqa: SIM115 - closed by stop()
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    head = LocalHead(proc, f"http://127.0.0.1:{dash}", temp, log)
    from ray.job_submission import JobSubmissionClient

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            JobSubmissionClient(head.url).list_jobs()
            return head
        except Exception:  # noqa: BLE001 - not up yet, or never: decided by the deadline
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (temp / "ray-start.log").read_text()[-2000:]
                head.stop()
                raise RayConnectError(f"the local Ray head did not start: {tail}") from None
            time.sleep(1)
