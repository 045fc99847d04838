"""Infrastructure failures post a short note and an error id; the traceback and host paths stay in the logs.

A full disk is real here: the kernel's ENOSPC from /dev/full (any user), and, where the tests run as root, a
64 KiB tmpfs as the bot's temp folder so the real plan checkout fills it.
"""

# ruff: noqa: F811 - pytest fixtures imported from tests.bot.conftest are test parameters by design
from __future__ import annotations

import json
import logging
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.ingress.app import create_app
from bot.ingress.service import Bot, SandboxPlanner
from bot.ingress.serving import ServedApp
from bot.sandbox.driver import SandboxDriver
from bot.sandbox.state import SandboxState
from tests.bot.conftest import app_key, make_settings, sandbox  # noqa: F401 - fixtures
from tests.bot.helpers import REPO, SECRET, experiment_body, experiment_file, repo_files

HOST_PATH = "/srv/openlab-secret-host/work"
Planner = Callable[[Any], Callable[..., Any]]


def _run(tmp_path: Path, url: str, key: tuple[Path, str], planner_factory: Planner,
         files: dict[str, str]) -> Iterator[tuple[SandboxDriver, Bot, int]]:
    bot = Bot(make_settings(tmp_path, url, key), planner_factory=planner_factory)
    bot.worker.retry_base_s = 60.0  # one attempt is enough to see the note; no retry storm during the test
    with ServedApp(create_app(bot)) as srv:
        d = SandboxDriver(url, srv.url, SECRET)
        d.setup_repo(REPO, repo_files(), roles={"maintainer": "write"}, app_public_key=key[1], app_id=1)
        yield d, bot, d.open_pull(REPO, "alice", "exp", files, "An experiment")


def _note(d: SandboxDriver, pr: int) -> str:
    notes = d.wait_for(lambda: [c["body"] for c in d.thread(REPO, pr)["comments"] if "openlab:infra" in c["body"]],
                       timeout=60)
    assert len(notes) == 1
    return str(notes[0])


def _assert_clean(note: str, caplog: pytest.LogCaptureFixture, detail: str) -> str:
    """The note names the kind of problem and an id; the log line with that id has the traceback."""
    [error_id] = re.findall(r"`(oe-[0-9a-f]{10})`", note)
    for leak in ("Traceback", "Errno", "/tmp", "/dev/", "/srv", "/home", "File \"", HOST_PATH, "No space left"):
        assert leak not in note, (leak, note)
    [rec] = [r for r in caplog.records if error_id in r.getMessage()]
    assert rec.exc_info is not None and detail in logging.Formatter().format(rec)
    return error_id


def test_disk_full_from_the_kernel(tmp_path: Path, sandbox: tuple[str, SandboxState],
                                   app_key: tuple[Path, str], caplog: pytest.LogCaptureFixture) -> None:
    def planner(gh: Any) -> Callable[..., Any]:
        def plan(repo: str, sha: str, paths: list[str]) -> dict[str, Any]:
            with open("/dev/full", "w") as sink:  # the kernel answers ENOSPC, as a full disk does
                sink.write(gh.get_contents(repo, paths[0], ref=sha) or "")
            return {}
        return plan

    caplog.set_level(logging.INFO, logger="openlab.bot")
    for d, bot, pr in _run(tmp_path, sandbox[0], app_key, planner, {"experiments/exp001_x.py": experiment_file(1)}):
        note = _note(d, pr)
        assert "the bot's disk is full" in note and "will retry" in note
        _assert_clean(note, caplog, "No space left on device")
        assert bot.ledger.queue_depth() == 1  # kept for the retry, not dropped


def test_unexpected_handler_error(tmp_path: Path, sandbox: tuple[str, SandboxState],
                                  app_key: tuple[Path, str], caplog: pytest.LogCaptureFixture) -> None:
    def planner(gh: Any) -> Callable[..., Any]:
        def plan(repo: str, sha: str, paths: list[str]) -> dict[str, Any]:
            return {p: int(f"{HOST_PATH}/{p}") for p in paths}  # a bug: ValueError quoting a host path
        return plan

    caplog.set_level(logging.INFO, logger="openlab.bot")
    for d, bot, pr in _run(tmp_path, sandbox[0], app_key, planner, {"experiments/exp001_x.py": experiment_file(1)}):
        note = _note(d, pr)
        assert "unexpected error" in note and "stopped retrying" in note
        error_id = _assert_clean(note, caplog, HOST_PATH)
        rows = [bot.ledger.delivery_status(g) or {} for g in d.sent]
        assert [r["status"] for r in rows] == ["failed"] and error_id in rows[0]["error"]


def _tmpfs(tmp_path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` (root only: elsewhere the /dev/full test above covers the kernel's ENOSPC)."""
    mnt = tmp_path / f"tmpfs-{size}"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip()[:80]}); /dev/full covers ENOSPC")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.fixture
def tiny_tmp(tmp_path: Path) -> Iterator[Path]:
    yield from _tmpfs(tmp_path, "64k")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    yield from _tmpfs(tmp_path, "4m")


def test_full_tmpfs_during_a_real_plan_checkout(tmp_path: Path, sandbox: tuple[str, SandboxState],
                                                app_key: tuple[Path, str], caplog: pytest.LogCaptureFixture,
                                                tiny_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tiny_tmp))  # the real SandboxPlanner checks out the PR here
    big = experiment_file(1) + "\n" + "# padding\n" * 20_000  # 200 KB: more than the disk holds
    caplog.set_level(logging.INFO, logger="openlab.bot")
    factory = lambda gh: SandboxPlanner(gh, 20.0, 1024)  # noqa: E731
    for d, _, pr in _run(tmp_path, sandbox[0], app_key, factory, {"experiments/exp001_x.py": big}):
        note = _note(d, pr)
        assert "the bot's disk is full" in note
        _assert_clean(note, caplog, "No space left on device")


def test_full_disk_under_the_ledger(sandbox: tuple[str, SandboxState], app_key: tuple[Path, str],
                                    small_disk: Path) -> None:
    """The ledger's own disk fills up: deliveries get 503 (GitHub may redeliver), the worker stays alive, and the
    redelivery goes through once there is space again."""
    url = sandbox[0]
    bot = Bot(make_settings(small_disk, url, app_key))
    bot.worker.retry_base_s = 0.2
    with ServedApp(create_app(bot)) as srv:
        d = SandboxDriver(url, srv.url, SECRET)
        d.setup_repo(REPO, repo_files(), roles={"maintainer": "write"}, app_public_key=app_key[1], app_id=1)
        filler = small_disk / "filler"
        with pytest.raises(OSError, match="No space left"), filler.open("wb") as f:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        with pytest.raises(RuntimeError, match='503: {"error":"ledger unavailable; please redeliver"}'):
            d.open_issue(REPO, "alice", "[Experiment]: full disk", experiment_body(), labels=["experiment"])
        [(guid, (_, body))] = d.sent.items()
        n = json.loads(body)["issue"]["number"]
        assert d.redeliver(guid).status_code == 503
        time.sleep(1.5)
        assert bot.worker._thread is not None and bot.worker._thread.is_alive()
        filler.unlink()
        assert d.redeliver(guid).status_code == 202
        d.wait_for(lambda: bot.ledger.queue_depth() == 0, timeout=60)
        assert "preregistered" in d.thread(REPO, n)["labels"]
