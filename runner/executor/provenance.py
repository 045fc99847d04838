"""Facts about the launch for provenance records: git state, user, host, argv, Ray job id."""

from __future__ import annotations

import getpass
import os
import socket
import sys
from pathlib import Path

from runner import gitinfo
from runner.executor.records import GitInfo


def git_info(path: str | Path) -> GitInfo:
    """The repository holding ``path``; a Ray job's working_dir has no .git, so OPENLAB_GIT_COMMIT is honoured."""
    g = gitinfo.git_state(path)
    return GitInfo(commit=g.commit, remote=g.remote, branch=g.branch, dirty=g.dirty)


def repo_root(path: str | Path) -> Path | None:
    return gitinfo.repo_root(path)


def user() -> str | None:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return os.environ.get("USER")


def host() -> str:
    return socket.gethostname()


def argv() -> list[str]:
    return list(sys.argv)
