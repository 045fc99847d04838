"""Fixtures for the run lifecycle tests: a real Ray head (the executor tests' fixture, reused), the GitHub
sandbox and the bot's FastAPI app served over real HTTP on loopback, and a real git repository whose SHAs the
sandbox uses, so the Ray job checks out exactly the approved commit."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.demo.lab import git, mirror_commit, open_real_pull
from bot.github.client import GitHubClient
from bot.ingress.serving import ServedApp, free_port
from bot.runs.dispatch import RunServices, attach_to_bot
from bot.runs.jobs import RayJobs
from bot.runs.reconcile import Reconciler
from bot.sandbox.driver import SandboxDriver
from bot.sandbox.server import create_sandbox_app
from bot.sandbox.state import SandboxState
from runner import attest
from tests.runner.executor import conftest as executor_fixtures

REPO_ROOT = Path(__file__).resolve().parents[2]
SECRET = "bot-runs-webhook-secret"
TOKEN = "ghs_botruns"
LAB = "lab/openlab"

# The executor engineer's real `ray start --head` (loopback, token auth, no usage stats), scoped to this package
# so its processes are gone before the next test area starts.
# Its environment fixture (token auth, usage stats off) comes along, set for this package and restored after.
executor_env = pytest.fixture(scope="package", autouse=True, name="executor_env")(
    executor_fixtures.executor_env.__wrapped__)
ray_head = pytest.fixture(scope="package", name="ray_head")(executor_fixtures.ray_head.__wrapped__)


def Served(app: Any) -> ServedApp:  # noqa: N802 - kept as the constructor name the tests use
    return ServedApp(app).start()


@dataclass
class Lab:
    """One sandbox GitHub + one bot + the git repository behind the sandbox repo."""

    state: SandboxState
    sandbox: ServedApp
    driver: SandboxDriver
    services: RunServices
    reconciler: Reconciler
    git_dir: Path
    prefix: Path
    public_pem: bytes
    bot: Any = None
    server: ServedApp | None = None

    def commit(self, branch: str, files: dict[str, str], base: str | None = None) -> str:
        """Commit ``files`` on ``branch`` of the real git repo (from ``base``) and mirror it into the sandbox."""
        return mirror_commit(self.state, LAB, self.git_dir, branch, files, base)

    def open_pull(self, user: str, branch: str, files: dict[str, str], title: str, body: str) -> int:
        """Open a PR whose head is a real git commit, then deliver `pull_request.opened` signed to the bot."""
        return open_real_pull(self.state, self.driver, LAB, self.git_dir, user, branch, files, title, body)

    def run(self, pr: int) -> dict[str, Any]:
        runs = self.services.ledger.runs(LAB, pr)
        assert runs, "no run recorded"
        return runs[-1]

    def reconcile_until(self, run_id: str, timeout: float = 240.0) -> dict[str, Any]:
        return self.reconciler.run_until_done(run_id, timeout)


def make_lab(tmp_path: Path, ray_url: str | None, *, serve_bot: bool = True, signing: bool = True) -> Lab:
    """Build a sandbox with the lab repo, a real git repo behind it, and the bot wired to Ray at ``ray_url``."""
    from bot.config.settings import BotSettings
    from bot.ingress.service import Bot

    state = SandboxState()
    sandbox = Served(create_sandbox_app(state))
    driver = SandboxDriver(sandbox.url, None, SECRET)
    files = {str(p.relative_to(REPO_ROOT)): p.read_text() for p in (REPO_ROOT / ".github" / "ISSUE_TEMPLATE").glob("*.yml")}
    files[".github/openlab.yml"] = (REPO_ROOT / ".github" / "openlab.yml").read_text()
    files["README.md"] = "# lab\n"
    driver.setup_repo(LAB, files=files, roles={"maintainer": "write", "alice": "read"}, tokens={TOKEN: "openlab[bot]"})
    git_dir = tmp_path / "git"
    git_dir.mkdir(parents=True)
    git(git_dir, "init", "-q", "-b", "main")
    prefix = tmp_path / "store"
    priv, pub = attest.generate_keypair()
    settings = BotSettings(webhook_secrets=[SECRET], ledger_url=f"sqlite:///{tmp_path / 'ledger.sqlite3'}",
                           github_api_url=sandbox.url, write_interval_s=0.0, plan_timeout_s=60)
    bot = Bot(settings, token=TOKEN)
    backend = RayJobs(address=ray_url or f"http://127.0.0.1:{free_port()}")
    services = attach_to_bot(bot, backend)
    bot.env_for(1)[0].gh.backoff_s = 0.01  # GitHub 5xx retries without whole seconds of sleep in tests
    services.storage_prefix = str(prefix)
    services.source = str(git_dir)
    services.signing_key = priv if signing else None
    services.leaderboard_results = str(tmp_path / "leaderboard" / "**" / "results.json")
    lab = Lab(state=state, sandbox=sandbox, driver=driver, services=services, reconciler=Reconciler(services),
              git_dir=git_dir, prefix=prefix, public_pem=pub, bot=bot)
    lab.commit("main", files)
    if serve_bot:
        from bot.ingress.app import create_app

        lab.server = Served(create_app(bot))
        driver.bot_url = lab.server.url + "/webhook"
    return lab


@pytest.fixture
def lab_factory(tmp_path: Path) -> Iterator[Any]:
    made: list[Lab] = []

    def make(ray_url: str | None, **kw: Any) -> Lab:
        lab = make_lab(tmp_path / f"lab{len(made)}", ray_url, **kw)
        made.append(lab)
        return lab

    yield make
    for lab in made:
        if lab.server:
            lab.server.stop()
        lab.sandbox.stop()
        shutil.rmtree(lab.git_dir, ignore_errors=True)


def gh_client(lab: Lab) -> GitHubClient:
    return GitHubClient(lab.sandbox.url, lambda: TOKEN, write_interval_s=0.0, backoff_s=0.01)
