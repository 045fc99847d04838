"""The plan sandbox: PR code runs with no secrets, no network, bounded CPU, memory and time, in its own dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.plans.sandbox import materialise, network_prefix, run_plan
from tests.bot.helpers import experiment_file


def _plan(tmp_path: Path, source: str, **kw: float) -> str | None:
    root = materialise({"experiments/exp001_x.py": source}, tmp_path / "checkout")
    return run_plan(root, "experiments/exp001_x.py", **kw).error  # type: ignore[arg-type]


def test_real_plan_in_the_sandbox(tmp_path: Path) -> None:
    root = materialise({"experiments/exp001_x.py": experiment_file(1)}, tmp_path / "checkout")
    out = run_plan(root, "experiments/exp001_x.py")
    assert out.error is None and out.plan is not None and out.plan.steps[0].identity == "exp1/noop@v1"


def test_no_secrets_in_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    monkeypatch.setenv("OPENLAB_WEBHOOK_SECRETS", "very-secret")
    err = _plan(tmp_path, "import os, sys\nsys.exit('ENV=' + ','.join(sorted(os.environ)) + ' CWD=' + os.getcwd())\n")
    assert err is not None and err.startswith("ENV=") and "TOKEN" not in err and "OPENLAB" not in err
    assert "HOME" in err and "CWD=/checkout" in err


@pytest.mark.skipif(not network_prefix(), reason="no network namespaces on this machine")
def test_no_network(tmp_path: Path) -> None:
    src = "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=5)\n"
    err = _plan(tmp_path, src)
    assert err is not None and ("unreachable" in err.lower() or "Errno" in err)


def test_time_and_memory_limits(tmp_path: Path) -> None:
    assert _plan(tmp_path, "while True:\n    pass\n", timeout_s=2) == "timed out after 2s"
    err = _plan(tmp_path, "x = bytearray(8 << 30)\n", memory_mb=1024)
    assert err is not None and "MemoryError" in err


def test_paths_cannot_escape_the_checkout(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="outside the checkout"):
        materialise({"../evil.py": "x"}, tmp_path / "c")
