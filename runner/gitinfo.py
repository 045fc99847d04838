"""The git state of the code that runs, for provenance (results.json and executor records alike).

A Ray job runs from a ``git archive`` of the approved SHA, which has no ``.git``: there the submitter's
``OPENLAB_GIT_COMMIT`` / ``OPENLAB_GIT_REMOTE`` are the truth, and the tree is clean by construction. They win
whenever they are set, because the interpreter may import openlab from another checkout (an editable install)
than the archive it runs.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GitState:
    commit: str | None = None
    remote: str | None = None
    branch: str | None = None
    dirty: bool | None = None


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def git_state(path: str | Path) -> GitState:
    """Git state of the repository holding ``path``, or of the archive the environment describes."""
    env_commit = os.environ.get("OPENLAB_GIT_COMMIT") or None
    if env_commit:
        return GitState(commit=env_commit, remote=os.environ.get("OPENLAB_GIT_REMOTE") or None, dirty=False)
    p = Path(path).resolve()
    cwd = p if p.is_dir() else p.parent
    commit = _git(["rev-parse", "HEAD"], cwd) if cwd.exists() else None
    if commit is None:
        return GitState()
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd)
    return GitState(
        commit=commit,
        remote=_git(["config", "--get", "remote.origin.url"], cwd) or None,
        branch=_git(["rev-parse", "--abbrev-ref", "HEAD"], cwd) or None,
        dirty=bool(status) if status is not None else None,
    )


def repo_root(path: str | Path) -> Path | None:
    p = Path(path).resolve()
    top = _git(["rev-parse", "--show-toplevel"], p if p.is_dir() else p.parent)
    return Path(top) if top else None
