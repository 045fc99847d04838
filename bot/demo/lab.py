"""The demo's lab: every real component on embedded defaults, wired the way an operator would wire them.

A local Ray head (Jobs API, loopback, token auth), the GitHub sandbox serving ``lab/openlab``, a real git
repository behind it made by ``openlab init`` (the path a lab takes; nothing is read from this project's tree) (so the Ray job runs exactly the approved commit), the bot's FastAPI app with its
dispatcher and reconciler, a local store, and a fresh Ed25519 lab key. Nothing reaches the network.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from bot.ingress.serving import ServedApp
from bot.runs.dispatch import RunServices, attach_to_bot
from bot.runs.jobs import RayJobs
from bot.runs.reconcile import Reconciler
from bot.sandbox.driver import SandboxDriver
from bot.sandbox.server import create_sandbox_app
from bot.sandbox.state import SandboxState
from runner.executor.local_head import LocalHead, start_head

REPO = "lab/openlab"
BOT = "openlab[bot]"
TOKEN = "ghs_demo_installation_token"
SECRET = "demo-webhook-secret-0123"
SITE_URL = (
    "https://lab.example/openlab"  # where the lab would publish its site; the transcript maps it to ./site
)


def git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "openlab demo",
        "GIT_AUTHOR_EMAIL": "demo@example.invalid",
        "GIT_COMMITTER_NAME": "openlab demo",
        "GIT_COMMITTER_EMAIL": "demo@example.invalid",
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def mirror_commit(state: SandboxState, repo: str, git_dir: Path, branch: str, files: dict[str, str],
                  base: str | None = None) -> str:
    """Commit ``files`` on ``branch`` of a real git repo and mirror the tree into the sandbox (same SHA)."""
    git(git_dir, "checkout", "-q", "-B", branch, *([base] if base else []))
    for path, text in files.items():
        p = git_dir / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    git(git_dir, "add", "-A")
    git(git_dir, "commit", "-q", "--allow-empty", "-m", f"update {branch}")
    sha = git(git_dir, "rev-parse", "HEAD")
    tree = {str(p.relative_to(git_dir)): p.read_text() for p in git_dir.rglob("*") if p.is_file() and ".git" not in p.parts}
    with state.lock:
        state.repos[repo].commits[sha] = tree
        state.repos[repo].branches[branch] = sha
    return sha


def open_real_pull(state: SandboxState, driver: SandboxDriver, repo: str, git_dir: Path, user: str, branch: str,
                   files: dict[str, str], title: str, body: str) -> int:
    """A PR whose head is a real commit; `pull_request.opened` is delivered to the bot (signed) if it listens."""
    main = state.repos[repo].branches["main"]
    env = driver._ctl("pulls", repo=repo, user=user, branch=branch, files={}, title=title, body=body)
    n = int(env["number"])
    sha = mirror_commit(state, repo, git_dir, branch, files, base=main)
    with state.lock:
        t = state.threads[(repo, n)]
        assert t.pull is not None
        t.pull["head_sha"] = sha
        env["pull_request"] = state.pull_shape(t)
    driver._send("pull_request", "opened", env, number=n)
    return n


def init_lab_repo(git_dir: Path, private_key: Path) -> dict[str, str]:
    """The lab repository at the start, made the way a lab makes it: `openlab init` in a fresh git repository
    (forms, workflows, openlab.yml, examples, key pair), then the site URL and a README. Returns its files."""
    from bot.adopt.init import init_lab

    init_lab(git_dir, private_key=private_key)
    cfg = git_dir / ".github/openlab.yml"
    cfg.write_text(cfg.read_text().replace("site_url: null", f"site_url: {SITE_URL}"))
    (git_dir / "README.md").write_text("# lab/openlab\n\nAn open lab (demo), set up with `openlab init`.\n")
    return {str(p.relative_to(git_dir)): p.read_text() for p in sorted(git_dir.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(git_dir).parts}


class DemoLab:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.git_dir = workdir / "lab-repo"
        self.store = workdir / "store"
        self.head: LocalHead | None = None
        self.sandbox: ServedApp | None = None
        self.server: ServedApp | None = None
        self.state = SandboxState(bot_login=BOT)
        self.driver: SandboxDriver
        self.services: RunServices
        self.reconciler: Reconciler
        self.public_pem = b""

    def start(self) -> DemoLab:
        from bot.config.settings import BotSettings
        from bot.ingress.app import create_app
        from bot.ingress.service import Bot

        if self.workdir.exists():
            shutil.rmtree(self.workdir)
        self.git_dir.mkdir(parents=True)
        self.head = start_head(num_cpus=2)
        self.sandbox = ServedApp(create_sandbox_app(self.state)).start()
        self.driver = SandboxDriver(self.sandbox.url, None, SECRET)
        git(self.git_dir, "init", "-q", "-b", "main")
        git(self.git_dir, "remote", "add", "origin", f"https://github.com/{REPO}.git")
        files = init_lab_repo(self.git_dir, self.workdir / "signing-key.pem")
        self.driver.setup_repo(
            REPO, files=files, roles={"maria": "maintain", "ada": "read"}, tokens={TOKEN: BOT}
        )
        self.commit("main", files)
        private = (self.workdir / "signing-key.pem").read_bytes()  # outside the repository, as init insists
        self.public_pem = (self.git_dir / ".github/openlab.pub").read_bytes()
        settings = BotSettings(
            webhook_secrets=[SECRET],
            ledger_url=f"sqlite:///{self.workdir / 'ledger.sqlite3'}",
            github_api_url=self.sandbox.url,
            write_interval_s=0.0,
            plan_timeout_s=180,
            bot_login=BOT,
            worker=True,
        )
        bot = Bot(settings, token=TOKEN)
        self.services = attach_to_bot(bot, RayJobs(address=self.head.url, dashboard_url=self.head.url))
        self.services.storage_prefix = str(self.store)
        self.services.source = str(self.git_dir)
        self.services.signing_key = private
        self.services.wandb_entity = "openlab-demo"
        self.services.leaderboard_results = str(self.workdir / "leaderboard" / "**" / "results.json")
        self.reconciler = Reconciler(self.services)
        self.server = ServedApp(create_app(bot)).start()
        self.driver.bot_url = self.server.url + "/webhook"
        return self

    def stop(self) -> None:
        for part in (self.server, self.sandbox):
            if part is not None:
                part.stop()
        if self.head is not None:
            self.head.stop()

    def commit(self, branch: str, files: dict[str, str], base: str | None = None) -> str:
        return mirror_commit(self.state, REPO, self.git_dir, branch, files, base)

    def open_pull(self, user: str, branch: str, files: dict[str, str], title: str, body: str) -> int:
        return open_real_pull(self.state, self.driver, REPO, self.git_dir, user, branch, files, title, body)

    def wait(self, predicate: Any, timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            got = predicate()
            if got:
                return got
            if time.monotonic() > deadline:
                raise TimeoutError(f"demo: timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(0.2)

    def bot_comments(self, number: int) -> list[dict[str, Any]]:
        return [c for c in self.driver.thread(REPO, number)["comments"] if c["user"] == BOT]

    def __enter__(self) -> DemoLab:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
