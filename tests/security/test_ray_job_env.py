"""Approved PR code on the lab's own Ray sees none of the bot's secrets in its environment or working folder.

A real local head is started from a process that holds the bot's secrets (as the demo and a single-machine lab
do), a real job is submitted the way the bot submits (``runner.executor.dispatch.submit``, even handed a secret
in ``env_vars`` by mistake), and the job prints its whole environment and greps its working folder.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.executor import dispatch
from runner.executor.ray_env import BOT_SECRETS, job_env

JOB = '''
import os, pathlib, re
print("JOB-ENV-BEGIN")
for k, v in sorted(os.environ.items()):
    print(f"{k}={v}")
hits = [str(p) for p in pathlib.Path(".").rglob("*") if p.is_file() and "openlab" + "-secret" in p.read_text(errors="ignore")]
print("JOB-FILES", sorted(p.name for p in pathlib.Path(".").iterdir()), "HITS", hits)
print("JOB-ENV-END")
raise SystemExit(0)
'''


@pytest.fixture
def head_with_secrets(monkeypatch: pytest.MonkeyPatch, secret: str) -> Iterator[str]:
    saved = {k: os.environ.get(k) for k in ("RAY_USAGE_STATS_ENABLED", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN",
                                            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_ADDRESS")}
    for name in ("GITHUB_TOKEN", "OPENLAB_WEBHOOK_SECRETS", "OPENLAB_SIGNING_KEY", "OPENLAB_LEDGER_URL"):
        monkeypatch.setenv(name, f"{secret}-{name}")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    from runner.executor.local_head import start_head

    head = start_head(num_cpus=1)
    try:
        yield head.url
    finally:
        head.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _repo(root: Path, secret: str) -> Path:
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "exp001_env.py").write_text(JOB)
    (root / "bot.env").write_text(f"OPENLAB_WEBHOOK_SECRETS={secret}\n")  # the bot's folder: never committed
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "experiments"], check=True)
    subprocess.run([*git, "commit", "-qm", "exp"], check=True)
    return root


def test_job_env_and_working_dir_hold_no_bot_secret(head_with_secrets: str, secret: str, tmp_path: Path) -> None:
    repo = _repo(tmp_path / "lab", secret)
    sub = dispatch.submit("experiments/exp001_env.py", "HEAD", address=head_with_secrets, repo=repo,
                          prefix=str(tmp_path / "store"), run_id="openlab-env-probe",
                          env_vars={"OPENLAB_RUN_ID": "openlab-env-probe", "GITHUB_TOKEN": f"{secret}-passed"})
    deadline = time.monotonic() + 120
    while not dispatch.status(sub.run_id, address=head_with_secrets).terminal:
        assert time.monotonic() < deadline, "the probe job did not finish"
        time.sleep(1)
    text = dispatch.logs(sub.run_id, address=head_with_secrets)
    assert "JOB-ENV-END" in text, text[-2000:]
    assert "OPENLAB_RUN_ID=openlab-env-probe" in text and "OPENLAB_GIT_COMMIT=" in text  # the probe printed env
    assert secret not in text
    assert "HITS []" in text and "bot.env" not in text


def test_job_env_drops_every_named_secret() -> None:
    env = {name: "x" for name in BOT_SECRETS} | {"MY_APP_PRIVATE_KEY": "x", "WANDB_API_KEY": "w", "PATH": "/bin"}
    assert job_env(env) == {"WANDB_API_KEY": "w", "PATH": "/bin"}
