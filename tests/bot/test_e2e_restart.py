"""Restart mid-queue: the real `openlab serve` process is SIGKILLed with deliveries queued and mid-apply;
after a restart everything is applied, nothing twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from bot.sandbox.driver import SandboxDriver
from bot.sandbox.state import SandboxState
from tests.bot.helpers import REPO, SECRET, bot_comments, experiment_body, free_port, repo_files


class ServeProcess:
    def __init__(self, tmp: Path, sandbox_url: str, key: Path, worker: bool) -> None:
        self.port = free_port()
        env = {**os.environ, "OPENLAB_WEBHOOK_SECRETS": SECRET, "OPENLAB_LEDGER_URL": f"sqlite:///{tmp}/l.sqlite3",
               "OPENLAB_GITHUB_API_URL": sandbox_url, "OPENLAB_APP_ID": "1", "OPENLAB_PRIVATE_KEY_PATH": str(key),
               "OPENLAB_WRITE_INTERVAL_S": "0", "OPENLAB_WORKER": "true" if worker else "false"}
        self.proc = subprocess.Popen([sys.executable, "-m", "runner.cli", "serve", "--port", str(self.port)], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(self.url + "/healthz", timeout=1)
                return
            except httpx.HTTPError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(self.proc.stderr.read().decode() if self.proc.stderr else "no start") from None
                time.sleep(0.1)

    def depth(self) -> int:
        return int(httpx.get(self.url + "/healthz", timeout=5).json()["queue_depth"])

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def settle(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while self.depth() > 0:
            assert time.monotonic() < deadline, "queue did not drain"
            time.sleep(0.1)


@pytest.mark.slow
def test_restart_mid_queue_loses_nothing_and_repeats_nothing(
    tmp_path: Path, sandbox: tuple[str, SandboxState], app_key: tuple[Path, str]
) -> None:
    url, state = sandbox
    first = ServeProcess(tmp_path, url, app_key[0], worker=False)
    d = SandboxDriver(url, first.url, SECRET)
    d.setup_repo(REPO, repo_files(), app_public_key=app_key[1], app_id=1)
    issues = [d.open_issue(REPO, "alice", f"[Experiment]: queued {i}", experiment_body(), labels=["experiment"])
              for i in range(4)]
    assert first.depth() == 4
    first.kill()  # queued, nothing applied yet

    d.configure(latency_s=0.15)  # slow GitHub so the next kill lands mid-delivery
    second = ServeProcess(tmp_path, url, app_key[0], worker=True)
    d.bot_url = second.url
    issues += [d.open_issue(REPO, "alice", f"[Experiment]: live {i}", experiment_body(), labels=["experiment"])
               for i in range(3)]
    d.wait_for(lambda: any(r["method"] == "POST" and r["path"].endswith("/comments") for r in state.requests))
    second.kill()
    assert len(state.requests) < 7 * 8, "the kill was meant to land before the queue drained"

    d.configure(latency_s=0.0)
    third = ServeProcess(tmp_path, url, app_key[0], worker=True)
    third.settle()
    d.bot_url = third.url
    for guid in list(d.sent)[:2]:  # GitHub redelivering after the outage changes nothing
        assert d.redeliver(guid).status_code == 200
    third.settle()
    for n in issues:
        t = d.thread(REPO, n)
        assert len(bot_comments(t, "preregistration")) == 1, (n, t["comments"])
        assert "preregistered" in t["labels"]
    third.kill()
