"""Facts about the launch for provenance records: git state, user, host, argv, Ray job id."""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
import sys
from pathlib import Path

from runner.executor.records import GitInfo


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def git_info(path: str | Path) -> GitInfo:
    """The repository holding ``path``; a Ray job's working_dir has no .git, so GIT_COMMIT is honoured."""
    p = Path(path).resolve()
    cwd = p if p.is_dir() else p.parent
    commit = _git(["rev-parse", "HEAD"], cwd)
    if commit is None:
        return GitInfo(
            commit=os.environ.get("OPENLAB_GIT_COMMIT"),
            remote=os.environ.get("OPENLAB_GIT_REMOTE"),
            dirty=False if os.environ.get("OPENLAB_GIT_COMMIT") else None,
        )
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd)
    return GitInfo(
        commit=commit,
        remote=_git(["config", "--get", "remote.origin.url"], cwd) or None,
        branch=_git(["rev-parse", "--abbrev-ref", "HEAD"], cwd) or None,
        dirty=bool(status) if status is not None else None,
    )


def repo_root(path: str | Path) -> Path | None:
    p = Path(path).resolve()
    top = _git(["rev-parse", "--show-toplevel"], p if p.is_dir() else p.parent)
    return Path(top) if top else None


def user() -> str | None:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return os.environ.get("USER")


def host() -> str:
    return socket.gethostname()


def argv() -> list[str]:
    return list(sys.argv)
