"""Planning PR code: ``openlab plan`` of one experiment file in the plan sandbox (:mod:`runner.sandbox`).

:func:`plan_checkout` is the one path the bot (``bot.plans.sandbox.run_plan``) and ``openlab plan --sandbox`` share.
Inside the sandbox ``python -I -m runner.sandbox_plan_entry plan FILE`` runs the plan command without loading
the ``openlab`` plugins (only ``runner`` is visible there). What it prints is untrusted data: it must parse as a
bounded :class:`runner.schema.Plan` before anything is stored or posted.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from runner.sandbox import Limits, Result, SandboxError, network_prefix, run_sandboxed, sandbox_mode
from runner.schema import Plan

WEAKER = "planned WITHOUT the sandbox (OPENLAB_PLAN_SANDBOX=unsandboxed): PR code could read the bot's files"


@dataclass(frozen=True)
class PlanOutcome:
    """What planning one experiment file gave: a validated plan or one error line, and how it was isolated."""

    path: str
    plan: Plan | None = None
    error: str | None = None
    network_isolated: bool = False
    isolation: str = ""  # the OPENLAB_PLAN_SANDBOX mode it ran under; "" when planned elsewhere (Actions mode)


def plan_checkout(checkout: Path, rel_path: str, limits: Limits | None = None, mode: str | None = None) -> PlanOutcome:
    """Plan ``rel_path`` of ``checkout`` in the sandbox: the one path the bot and `openlab plan --sandbox` share."""
    limits = limits or Limits()
    try:
        mode = sandbox_mode(mode)
        argv = [sys.executable, "-I", "-m", "runner.sandbox_plan_entry", "plan", rel_path]
        res = run_sandboxed(checkout, argv, limits, mode)
    except SandboxError as err:
        return PlanOutcome(rel_path, error=str(err), isolation=mode or "")
    outcome = _outcome(rel_path, res, limits)
    isolated = mode != "unsandboxed" or bool(network_prefix())
    if mode != "unsandboxed":
        return PlanOutcome(rel_path, outcome.plan, outcome.error, isolated, mode)
    if outcome.plan is not None:
        plan = outcome.plan.model_copy(update={"warnings": [*outcome.plan.warnings, WEAKER]})
        return PlanOutcome(rel_path, plan, None, isolated, mode)
    return PlanOutcome(rel_path, None, f"{outcome.error} ({WEAKER})", isolated, mode)


def _outcome(rel_path: str, res: Result, limits: Limits) -> PlanOutcome:
    if res.timed_out:
        return PlanOutcome(rel_path, error=f"timed out after {limits.timeout_s:.0f}s")
    if res.truncated:
        return PlanOutcome(rel_path, error=f"printed more than {limits.output_bytes} bytes: stopped")
    if res.returncode != 0:
        return PlanOutcome(rel_path, error=last_error(res.stderr.decode(errors="replace"), res.returncode or 0))
    try:
        return PlanOutcome(rel_path, plan=Plan.model_validate_json(res.stdout))
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])[:200]
        return PlanOutcome(rel_path, error=f"plan output is not a valid Plan: {where}: {first['msg']}"[:500])


def last_error(stderr: str, rc: int) -> str:
    """The line worth showing from a failed plan: its last ``error:`` line, else its last line, else the signal."""
    if rc < 0 or rc > 128:  # killed by a signal (bwrap reports its child's as 128 + signal)
        with contextlib.suppress(ValueError):
            name = signal.Signals(-rc if rc < 0 else rc - 128).name
            return {"SIGXCPU": "CPU time limit exceeded", "SIGKILL": "killed (memory or time limit)",
                    "SIGXFSZ": "file size limit exceeded"}.get(name, name)
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error:")]
    return (errors[-1] if errors else (lines[-1] if lines else f"exit status {rc}"))[:500]
