"""The bot's door to the plan sandbox (:mod:`runner.sandbox`): the same path `openlab plan --sandbox` takes.

The bot never imports PR code: :func:`run_plan` plans one file of a materialised checkout with
:func:`runner.sandbox_plan.plan_checkout` (bubblewrap by default, fail closed without it, ``OPENLAB_PLAN_SANDBOX``).
"""

from __future__ import annotations

from pathlib import Path

from runner.sandbox import Limits, network_prefix
from runner.sandbox_plan import PlanOutcome, last_error, plan_checkout

__all__ = ["PlanOutcome", "materialise", "network_prefix", "run_plan", "_last_error"]

_last_error = last_error


def run_plan(workdir: Path, rel_path: str, *, timeout_s: float = 120.0, memory_mb: int = 4096) -> PlanOutcome:
    """Plan `rel_path` inside `workdir` (a checkout of the PR at its head SHA) in the plan sandbox."""
    return plan_checkout(workdir, rel_path, Limits(timeout_s=timeout_s, memory_mb=memory_mb))


def materialise(files: dict[str, str], root: Path) -> Path:
    """Write {repo path: text} under root, refusing paths that escape it (PR file names are untrusted)."""
    root = root.resolve()
    for rel, text in files.items():
        target = (root / rel).resolve()
        if not target.is_relative_to(root):
            raise ValueError(f"refusing path outside the checkout: {rel!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root
