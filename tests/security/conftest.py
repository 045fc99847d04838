"""Plumbing for attacking the plan sandbox the way a hostile PR would, through the bot's own path.

``plan_attack`` writes an experiment file into a checkout, plans it with :func:`runner.sandbox_plan.plan_checkout`
(what ``bot.plans.sandbox.run_plan`` and ``openlab plan --sandbox`` call), turns the outcome into the bot's
plan comment and check run, and returns everything that would be stored or posted as one text to search for
the secret. ``host_unharmed`` checks after the attack that nothing the sandbox started is still running and
that the host can still start processes.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.actions import UpsertCheckRun, UpsertComment
from bot.config.repo_config import RepoConfig
from bot.forms.linking import ExperimentFile
from bot.plans.report import plan_actions
from bot.plans.sandbox import materialise
from runner.sandbox import NOBODY, Limits
from runner.sandbox_plan import PlanOutcome, plan_checkout
from tests.bot.conftest import app_key, lab, sandbox  # noqa: F401 - the real bot on the GitHub sandbox, for e2e

EXPERIMENT = "experiments/exp001_attack.py"
VALID_TAIL = '''
from dataclasses import dataclass
from runner.executor import Step, StepContext

@dataclass(frozen=True)
class Noop:
    text: str = "hi"

def noop(cfg: Noop, ctx: StepContext) -> dict:
    return {}

STEPS = [Step("exp1/noop", noop, Noop(), version="v1")]
'''


@dataclass
class Attack:
    outcome: PlanOutcome
    posted: str  # the plan JSON, the error, the comment body and the check run, concatenated
    elapsed_s: float


def posted_text(outcome: PlanOutcome) -> str:
    actions = plan_actions("lab/openlab", 7, "a" * 40, [ExperimentFile(outcome.path, 1)], {outcome.path: outcome},
                           {1: "preregistered"}, {1: 1e18}, RepoConfig())
    parts = [outcome.plan.model_dump_json() if outcome.plan else "", outcome.error or ""]
    for a in actions:
        if isinstance(a, UpsertComment):
            parts.append(a.body)
        elif isinstance(a, UpsertCheckRun):
            parts += [a.title or "", a.summary or ""]
    return "\n".join(parts)


@pytest.fixture
def secret() -> str:
    return f"openlab-secret-{uuid.uuid4().hex}"


@pytest.fixture
def plan_attack(tmp_path: Path) -> Callable[..., Attack]:
    def run(source: str, *, timeout_s: float = 20.0, memory_mb: int = 4096, mode: str | None = "bwrap",
            checkout: Path | None = None) -> Attack:
        root = checkout or tmp_path / "checkout"
        materialise({EXPERIMENT: source}, root)
        root.chmod(0o700)  # as the bot's temporary checkout is
        start = time.monotonic()
        outcome = plan_checkout(root, EXPERIMENT, Limits(timeout_s=timeout_s, memory_mb=memory_mb), mode)
        return Attack(outcome, posted_text(outcome), time.monotonic() - start)

    return run


def _nobody_pids() -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and d.stat().st_uid == NOBODY:
                out.append(int(d.name))
        except OSError:
            continue
    return out


@pytest.fixture
def host_unharmed() -> Iterator[None]:
    """After the attack: no sandboxed process left (they run as uid 65534) and the host still forks."""
    before = set(_nobody_pids())
    yield
    deadline = time.monotonic() + 5
    while (left := set(_nobody_pids()) - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"sandboxed processes outlived the plan: {sorted(left)}"
    assert subprocess.run(["true"], timeout=10).returncode == 0
    assert os.path.isdir("/proc/self")
