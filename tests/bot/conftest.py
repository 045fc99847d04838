"""Fixtures: the GitHub sandbox and a real bot (FastAPI under uvicorn) wired to it, plus a driver."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.config.settings import BotSettings
from bot.ingress.app import create_app
from bot.ingress.service import Bot
from bot.sandbox.driver import SandboxDriver
from bot.sandbox.server import create_sandbox_app
from bot.sandbox.state import SandboxState
from tests.bot.helpers import OLD_SECRET, REPO, SECRET, ServerThread, repo_files, rsa_pair


@pytest.fixture(scope="session")
def app_key(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    private, public = rsa_pair()
    path = tmp_path_factory.mktemp("app") / "app.pem"
    path.write_text(private)
    return path, public


@pytest.fixture
def sandbox() -> Iterator[tuple[str, SandboxState]]:
    state = SandboxState()
    with ServerThread(create_sandbox_app(state)) as srv:
        yield srv.url, state


def make_settings(tmp_path: Path, sandbox_url: str, app_key: tuple[Path, str], **over: object) -> BotSettings:
    values: dict[str, object] = dict(
        webhook_secrets=[SECRET, OLD_SECRET], ledger_url=f"sqlite:///{tmp_path}/ledger.sqlite3",
        github_api_url=sandbox_url, app_id="1", private_key_path=app_key[0], write_interval_s=0.0,
        bot_login="openlab[bot]", plan_timeout_s=20.0,
        recovery_interval_s=0,  # tests/bot/test_recovery.py turns the delivery-log recovery on where it tests it
    )
    values.update(over)
    return BotSettings(**values)  # type: ignore[arg-type]


@dataclass
class Lab:
    driver: SandboxDriver
    bot: Bot
    state: SandboxState
    bot_url: str

    def settle(self, timeout: float = 30.0) -> None:
        """Wait until the bot's queue is empty (every delivered webhook fully applied)."""
        self.driver.wait_for(lambda: self.bot.ledger.queue_depth() == 0, timeout=timeout, interval=0.05)


@pytest.fixture
def lab(tmp_path: Path, sandbox: tuple[str, SandboxState], app_key: tuple[Path, str]) -> Iterator[Lab]:
    url, state = sandbox
    bot = Bot(make_settings(tmp_path, url, app_key))
    bot.worker.retry_base_s = 0.2
    with ServerThread(create_app(bot)) as srv:
        driver = SandboxDriver(url, srv.url, SECRET)
        driver.setup_repo(REPO, repo_files(), roles={"maintainer": "write", "triager": "triage", "admin1": "admin"},
                          app_public_key=app_key[1], app_id=1)
        yield Lab(driver, bot, state, srv.url)
