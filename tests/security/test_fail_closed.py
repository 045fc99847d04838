"""Without its sandbox tool the bot plans no PR code and the check says why; the opt-out is explicit and loud.

Also ``openlab plan --sandbox``: the same function as the bot, so the same answers from the command line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.actions import UpsertCheckRun, UpsertComment
from bot.config.repo_config import RepoConfig
from bot.forms.linking import ExperimentFile
from bot.plans.report import plan_actions
from bot.plans.sandbox import materialise, run_plan
from runner.cli import main
from runner.sandbox_plan import WEAKER
from tests.security.conftest import EXPERIMENT, VALID_TAIL, Attack


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@pytest.mark.usefixtures("no_bwrap")
def test_missing_tool_plans_nothing_and_the_check_says_how_to_fix(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    root = materialise({EXPERIMENT: f"open({str(marker)!r}, 'w').write('PR code ran')\n"}, tmp_path / "checkout")
    outcome = run_plan(root, EXPERIMENT, timeout_s=10)
    assert outcome.plan is None and not marker.exists()
    assert outcome.error is not None and "apt-get install bubblewrap" in outcome.error
    actions = plan_actions("lab/openlab", 7, "b" * 40, [ExperimentFile(EXPERIMENT, 1)], {EXPERIMENT: outcome},
                           {1: "preregistered"}, {1: 1e18}, RepoConfig())
    check = next(a for a in actions if isinstance(a, UpsertCheckRun))
    comment = next(a for a in actions if isinstance(a, UpsertComment))
    assert check.conclusion == "failure" and "not installed" in (check.summary or "")
    assert "apt-get install bubblewrap" in comment.body


def test_unknown_mode_names_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENLAB_PLAN_SANDBOX", "docker-maybe")
    root = materialise({EXPERIMENT: VALID_TAIL}, tmp_path / "checkout")
    outcome = run_plan(root, EXPERIMENT, timeout_s=10)
    assert outcome.plan is None and "OPENLAB_PLAN_SANDBOX='docker-maybe'" in (outcome.error or "")


def test_opt_out_states_the_weaker_isolation(plan_attack: Callable[..., Attack]) -> None:
    ok = plan_attack(VALID_TAIL, mode="unsandboxed")
    assert ok.outcome.plan is not None and ok.outcome.isolation == "unsandboxed"
    assert WEAKER in ok.outcome.plan.warnings and WEAKER in ok.posted
    failed = plan_attack("raise SystemExit('error: broken')\n", mode="unsandboxed")
    assert failed.outcome.error is not None and WEAKER in failed.outcome.error and WEAKER in failed.posted


def test_cli_plan_sandbox_is_the_bots_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = materialise({EXPERIMENT: VALID_TAIL, "experiments/exp002_bad.py": "import sys\nsys.exit('error: no')\n"},
                       tmp_path / "checkout")
    monkeypatch.chdir(root)
    runner = CliRunner()
    ok = runner.invoke(main, ["plan", "--sandbox", EXPERIMENT])
    assert ok.exit_code == 0, ok.output
    assert '"identity": "exp1/noop@v1"' in ok.stdout and '"prefix": "/checkout/out/steps"' in ok.stdout
    bad = runner.invoke(main, ["plan", "--sandbox", "experiments/exp002_bad.py"])
    assert bad.exit_code == 2 and "error: no" in bad.output
    outside = runner.invoke(main, ["plan", "--sandbox", "../elsewhere.py"])
    assert outside.exit_code == 2 and "current directory" in outside.output
    monkeypatch.setenv("PATH", str(tmp_path))
    closed = runner.invoke(main, ["plan", "--sandbox", EXPERIMENT])
    assert closed.exit_code == 2 and "apt-get install bubblewrap" in closed.output
