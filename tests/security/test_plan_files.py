"""A hostile experiment file tries to read the bot's secrets, write outside its checkout and reach sockets.

Every attack goes through the bot's own plan path and greps what it gets for the secret, the way a real attacker
greps for ``-----BEGIN``; each test asserts the secret is nowhere in the plan, the comment or the check run.
The last test is the control: the same attack unsandboxed does leak, so the detection itself works.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import subprocess
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.ledger import Ledger
from runner.sandbox_plan import WEAKER
from tests.bot.conftest import Lab
from tests.bot.helpers import REPO, SECRET, bot_comments, experiment_body
from tests.security.conftest import EXPERIMENT, Attack

pytestmark = pytest.mark.usefixtures("host_unharmed")

PRELUDE = '''
import os, re, socket, sys
found, notes = [], []

def grab(data):
    m = re.search(r"openlab-secret-[0-9a-f]{32}", data)
    if m:
        found.append(m.group(0))
    return bool(m)

def try_read(p):
    try:
        with open(p, "rb") as f:
            data = f.read(1 << 22).decode("latin-1")
    except Exception as e:
        notes.append(f"{p}:{type(e).__name__}")
        return
    notes.append(f"{p}:{'LEAK' if grab(data) else 'read'}")
'''
REPORT = '''
sys.exit("ATTACK " + ("LEAKED " + " ".join(found) if found else "NOTHING " + ";".join(notes)))
'''


def attack(body: str) -> str:
    return PRELUDE + body + REPORT


def assert_safe(a: Attack, secret: str) -> None:
    assert a.outcome.error is not None and "ATTACK NOTHING" in a.outcome.error, a.outcome.error
    assert secret not in a.posted


def key_file(folder: Path, secret: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / "app-key.pem"
    key.write_text(f"-----BEGIN PRIVATE KEY-----\n{secret}\n-----END PRIVATE KEY-----\n")
    return key


def test_app_key_through_its_settings_path(plan_attack: Callable[..., Attack], secret: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    key = key_file(tmp_path / "keys", secret)
    monkeypatch.setenv("OPENLAB_PRIVATE_KEY_PATH", str(key))
    a = plan_attack(attack(f'try_read(os.environ.get("OPENLAB_PRIVATE_KEY_PATH", "unset"))\ntry_read({str(key)!r})'))
    assert_safe(a, secret)
    assert "FileNotFoundError" in a.outcome.error  # type: ignore[operator]


def test_app_key_through_home(plan_attack: Callable[..., Attack], secret: str, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    key = key_file(home / ".config" / "openlab", secret)
    monkeypatch.setenv("HOME", str(home))
    body = (f'try_read(os.path.expanduser("~/.config/openlab/app-key.pem"))\ntry_read({str(key)!r})\n'
            f'notes.append("home=" + ",".join(os.listdir(os.path.expanduser("~"))))')
    assert_safe(plan_attack(attack(body)), secret)


def test_bot_working_dir(plan_attack: Callable[..., Attack], secret: str, tmp_path: Path,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    workdir = tmp_path / "bot"
    workdir.mkdir()
    (workdir / ".env").write_text(f"OPENLAB_WEBHOOK_SECRETS={secret}\n")
    monkeypatch.chdir(workdir)
    body = f'try_read({str(workdir / ".env")!r})\ntry_read("../.env")\ntry_read(os.getcwd() + "/../bot/.env")'
    assert_safe(plan_attack(attack(body)), secret)


def test_ledger(plan_attack: Callable[..., Attack], secret: str, tmp_path: Path) -> None:
    path = tmp_path / "state" / "openlab-ledger.sqlite3"
    path.parent.mkdir()
    Ledger(f"sqlite:///{path}")
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE loot (v TEXT)")
        db.execute("INSERT INTO loot VALUES (?)", (secret,))
        db.commit()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # into the main file, where a reader of the path finds it
    assert secret.encode() in path.read_bytes()
    assert_safe(plan_attack(attack(f"try_read({str(path)!r})\ntry_read({str(path) + '-wal'!r})")), secret)


def test_other_processes_proc(plan_attack: Callable[..., Attack], secret: str,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", secret)  # the bot's own environment
    other = subprocess.Popen(["sleep", "60", secret], env={"OPENLAB_WEBHOOK_SECRETS": secret})
    try:
        body = (f"for p in [{other.pid}, {os.getpid()}, 1, 2]:\n"
                "    try_read(f'/proc/{p}/environ'); try_read(f'/proc/{p}/cmdline')\n"
                "for d in os.listdir('/proc'):\n"
                "    if d.isdigit():\n"
                "        try_read(f'/proc/{d}/environ'); try_read(f'/proc/{d}/cmdline')\n")
        assert_safe(plan_attack(attack(body)), secret)
    finally:
        other.kill()
        other.wait()


def test_committed_symlink_to_a_key_file(plan_attack: Callable[..., Attack], secret: str, tmp_path: Path) -> None:
    key = key_file(tmp_path, secret)
    checkout = tmp_path / "checkout"
    (checkout / "experiments").mkdir(parents=True)
    (checkout / "experiments" / "abs.pem").symlink_to(key)
    (checkout / "experiments" / "rel.pem").symlink_to("../../app-key.pem")
    (checkout / "experiments" / "data.txt").write_text("fine")
    (checkout / "experiments" / "inside.txt").symlink_to("data.txt")
    body = "for n in ['abs.pem', 'rel.pem', 'inside.txt']:\n    try_read('experiments/' + n)\n"
    a = plan_attack(attack(body), checkout=checkout)
    assert_safe(a, secret)
    assert "experiments/inside.txt:read" in a.outcome.error  # type: ignore[operator]


def test_writing_outside_the_checkout(plan_attack: Callable[..., Attack], secret: str, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("original")
    checkout = tmp_path / "checkout"
    targets = [str(victim), str(tmp_path / "new.txt"), "/usr/pwned", "/pwned", "../pwned",
               str(checkout / "experiments" / "x.txt")]
    body = "\n".join([
        f"for p in {targets!r}:",
        "    try:",
        "        open(p, 'w').write('pwned')",
        "        notes.append(p + ':wrote')",
        "    except Exception as e:",
        "        notes.append(p + ':' + type(e).__name__)",
        "open('/tmp/scratch', 'w').write('ok')",
    ])
    a = plan_attack(attack(body), checkout=checkout)
    assert_safe(a, secret)
    assert victim.read_text() == "original" and not (tmp_path / "new.txt").exists()
    assert not (checkout / "experiments" / "x.txt").exists()  # the sandbox wrote into its throwaway copy only
    assert not Path("/usr/pwned").exists() and not Path("/pwned").exists()


def _listen(kind: int, address: object) -> tuple[socket.socket, list[object], threading.Thread]:
    srv = socket.socket(kind, socket.SOCK_STREAM)
    srv.bind(address)  # type: ignore[arg-type]
    srv.listen()
    srv.settimeout(0.2)
    accepted: list[object] = []

    def serve() -> None:
        while srv.fileno() >= 0:
            with contextlib.suppress(OSError):
                conn, _ = srv.accept()
                accepted.append(conn)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return srv, accepted, t


def test_loopback_port(plan_attack: Callable[..., Attack], secret: str) -> None:
    srv, accepted, t = _listen(socket.AF_INET, ("127.0.0.1", 0))
    port = srv.getsockname()[1]
    try:
        body = (f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n"
                "    notes.append('CONNECTED')\nexcept OSError as e:\n    notes.append('refused:' + str(e))")
        a = plan_attack(attack(body))
    finally:
        srv.close()
        t.join(2)
    assert_safe(a, secret)
    assert not accepted and "CONNECTED" not in a.posted


def test_unix_sockets(plan_attack: Callable[..., Attack], secret: str, tmp_path: Path) -> None:
    path = str(tmp_path / "bot.sock")
    abstract = f"\0openlab-{uuid.uuid4().hex}"
    servers = [_listen(socket.AF_UNIX, path), _listen(socket.AF_UNIX, abstract)]
    try:
        body = (f"for addr in [{path!r}, {abstract!r}]:\n"
                "    try:\n        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
                "        s.connect(addr); notes.append('CONNECTED')\n"
                "    except OSError as e:\n        notes.append(type(e).__name__)\n")
        a = plan_attack(attack(body))
    finally:
        for srv, _, t in servers:
            srv.close()
            t.join(2)
    assert_safe(a, secret)
    assert not any(acc for _, acc, _ in servers) and "CONNECTED" not in a.posted
    assert "PermissionError" in (a.outcome.error or "")  # the seccomp filter refuses the socket itself


def test_control_unsandboxed_leaks_and_says_so(plan_attack: Callable[..., Attack], secret: str,
                                               tmp_path: Path) -> None:
    """The detection works: with the explicit opt-out the same read leaks, and the post names the weaker mode."""
    key = key_file(tmp_path / "keys", secret)
    a = plan_attack(attack(f"try_read({str(key)!r})"), mode="unsandboxed")
    assert secret in a.posted and WEAKER in a.posted
    assert EXPERIMENT in a.posted


def test_end_to_end_pr_reading_the_bots_secrets(lab: Lab, app_key: tuple[Path, str], tmp_path: Path) -> None:
    """Over HTTP: a PR whose experiment hunts for the App key, the ledger and the webhook secret in every readable
    /proc entry; the check run and every comment the bot posts hold none of them, and the check fails.
    (Run with OPENLAB_PLAN_SANDBOX=unsandboxed this test fails: the key's first line is posted.)"""
    pem = app_key[0].read_text().splitlines()[1]
    body = ("def hunt(p):\n    try:\n        d = open(p, 'rb').read(1 << 22).decode('latin-1')\n"
            "    except Exception as e:\n        notes.append(type(e).__name__)\n        return\n"
            "    for m in re.finditer(r'-----BEGIN[^\\n]*\\n([A-Za-z0-9+/=]{40,})|WEBHOOK_SECRETS=([^\\x00]+)', d):\n"
            "        found.append((m.group(1) or m.group(2))[:70])\n"
            f"for p in [{str(app_key[0])!r}, {str(tmp_path / 'ledger.sqlite3')!r}]:\n    hunt(p)\n"
            "for d in os.listdir('/proc'):\n    if d.isdigit():\n        hunt(f'/proc/{d}/environ')\n")
    n = lab.driver.open_issue(REPO, "alice", "[Experiment]: hostile", experiment_body(), labels=["experiment"])
    lab.settle()
    pr = lab.driver.open_pull(REPO, "alice", "exp-hostile", {f"experiments/exp{n:03d}_hostile.py": attack(body)},
                              "Hostile", f"Preregistration: #{n}", fork_owner="alice")
    lab.settle(timeout=60)
    t = lab.driver.thread(REPO, pr)
    [check] = t["check_runs"]
    posted = str(check["output"]) + "".join(c["body"] for c in bot_comments(t))
    assert check["conclusion"] == "failure" and "ATTACK NOTHING" in posted, posted
    assert pem not in posted and SECRET not in posted
