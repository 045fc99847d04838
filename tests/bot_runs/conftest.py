"""Fixtures for the run lifecycle tests: a real Ray head (the executor tests' fixture, reused), the GitHub
sandbox and the bot's FastAPI app served over real HTTP on loopback, and a real git repository whose SHAs the
sandbox uses, so the Ray job checks out exactly the approved commit."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from bot.dispatch import RunServices, attach_to_bot
from bot.github import GitHubClient
from bot.jobs import RayJobs
from bot.reconcile import Reconciler
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """An ASGI app on a real loopback port, in a thread of this process."""

    def __init__(self, app: Any) -> None:
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True, env=env).stdout.strip()


@dataclass
class Lab:
    """One sandbox GitHub + one bot + the git repository behind the sandbox repo."""

    state: SandboxState
    sandbox: Served
    driver: SandboxDriver
    services: RunServices
    reconciler: Reconciler
    git_dir: Path
    prefix: Path
    public_pem: bytes
    bot: Any = None
    server: Served | None = None

    def commit(self, branch: str, files: dict[str, str], base: str | None = None) -> str:
        """Commit ``files`` on ``branch`` of the real git repo (from ``base``) and mirror it into the sandbox."""
        if base is not None:
            git(self.git_dir, "checkout", "-q", "-B", branch, base)
        else:
            git(self.git_dir, "checkout", "-q", "-B", branch)
        for path, text in files.items():
            p = self.git_dir / path
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        git(self.git_dir, "add", "-A")
        git(self.git_dir, "commit", "-q", "--allow-empty", "-m", f"commit on {branch}")
        sha = git(self.git_dir, "rev-parse", "HEAD")
        tree = {str(p.relative_to(self.git_dir)): p.read_text() for p in self.git_dir.rglob("*")
                if p.is_file() and ".git" not in p.parts}
        with self.state.lock:
            repo = self.state.repos[LAB]
            repo.commits[sha] = tree
            repo.branches[branch] = sha
        return sha

    def open_pull(self, user: str, branch: str, files: dict[str, str], title: str, body: str) -> int:
        """Open a PR whose head is a real git commit, then deliver `pull_request.opened` signed to the bot."""
        main = self.state.repos[LAB].branches["main"]
        env = self.driver._ctl("pulls", repo=LAB, user=user, branch=branch, files={}, title=title, body=body)
        n = int(env["number"])
        sha = self.commit(branch, files, base=main)
        with self.state.lock:
            t = self.state.threads[(LAB, n)]
            assert t.pull is not None
            t.pull["head_sha"] = sha
            env["pull_request"] = self.state.pull_shape(t)
        self.driver._send("pull_request", "opened", env, number=n)
        return n

    def run(self, pr: int) -> dict[str, Any]:
        runs = self.services.ledger.runs(LAB, pr)
        assert runs, "no run recorded"
        return runs[-1]

    def reconcile_until(self, run_id: str, timeout: float = 240.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            self.reconciler.run_once()
            report = self.services.states.get(run_id)
            if report is not None and report.phase == "done":
                return self.services.ledger.run(run_id) or {}
            if time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} not done: {report}")
            time.sleep(1.0)


def make_lab(tmp_path: Path, ray_url: str | None, *, serve_bot: bool = True, signing: bool = True) -> Lab:
    """Build a sandbox with the lab repo, a real git repo behind it, and the bot wired to Ray at ``ray_url``."""
    from bot.service import Bot
    from bot.settings import BotSettings

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
        from bot.app import create_app

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
