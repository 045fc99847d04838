"""Provenance git state: a checkout reports its HEAD and dirtiness; a Ray job's archive reports the env SHA."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from runner.gitinfo import git_state


def test_checkout_and_dirty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENLAB_GIT_COMMIT", raising=False)
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x",
    }
    def run(*a: str) -> None:
        subprocess.run(
            ["git", *a], cwd=tmp_path, check=True, capture_output=True, env={**env, "PATH": "/usr/bin:/bin"}
        )
    run("init", "-q")
    (tmp_path / "f.txt").write_text("a")
    run("add", "f.txt")
    run("commit", "-qm", "x")
    g = git_state(tmp_path)
    assert g.commit and len(g.commit) == 40 and g.dirty is False
    (tmp_path / "f.txt").write_text("b")
    assert git_state(tmp_path).dirty is True


def test_archive_uses_the_submitted_sha(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENLAB_GIT_COMMIT", raising=False)
    assert git_state(tmp_path).commit is None
    monkeypatch.setenv("OPENLAB_GIT_COMMIT", "c" * 40)
    monkeypatch.setenv("OPENLAB_GIT_REMOTE", "https://github.com/lab/x")
    g = git_state(Path(__file__))  # even inside a checkout: the job's SHA is the truth
    assert (g.commit, g.remote, g.dirty) == ("c" * 40, "https://github.com/lab/x", False)
