"""The FLOPs and tokens that gate a run, computed by trusted code in the bot.

`openlab plan` runs the PR's experiment file, so every number it prints is the PR's word: an experiment can patch
`runner.flops.estimate` while planning and report 3 FLOPs for a 7.8e22-FLOP run. The plan's step configs are data
the bot can check, though: each train step's config holds the `RunConfig` the trainer will run (the executor
rebuilds it from exactly that JSON), so the bot validates those configs and recomputes FLOPs and tokens with
`runner.flops` itself. Budgets, the plan check, the ledger's plan record and the token cap the trainer enforces
(`OPENLAB_APPROVED_TOKENS`) all use these numbers; a plan whose own numbers disagree fails its check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from runner.config import RunConfig
from runner.flops import estimate
from runner.schema import Plan, PlanStep

MAX_DEPTH = 8  # run configs sit at the top of a step config or one or two objects down; deeper is not searched


@dataclass(frozen=True)
class StepBudget:
    identity: str
    model_flops: float | None
    tokens: int | None


@dataclass(frozen=True)
class TrustedBudget:
    """Recomputed totals, per-step figures, and what in the plan does not add up (each names the step)."""

    model_flops: float
    tokens: int
    steps: list[StepBudget] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def run_configs(config: Any, depth: int = 0) -> list[RunConfig]:
    """Every `RunConfig` inside a step's JSON config (a dict with `model` and `train` that validates as one)."""
    if depth > MAX_DEPTH:
        return []
    if isinstance(config, dict):
        if "model" in config and "train" in config:
            try:
                return [RunConfig.model_validate(config)]
            except ValidationError:
                return []
        return [c for v in config.values() for c in run_configs(v, depth + 1)]
    if isinstance(config, list):
        return [c for v in config for c in run_configs(v, depth + 1)]
    return []


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1.0)


def step_budget(step: PlanStep) -> tuple[StepBudget, list[str]]:
    configs = run_configs(step.config)
    problems: list[str] = []
    if not configs:
        if step.kind == "train":
            problems.append(f"step `{step.identity}` is a train step but its config holds no run config the bot "
                            "can check, so its FLOPs are unknown")
        elif step.model_flops or step.tokens:
            problems.append(f"step `{step.identity}` claims {step.model_flops or 0:.3g} model FLOPs but its config "
                            "holds no run config")
        return StepBudget(step.identity, None, None), problems
    flops = sum(estimate(c).model_flops for c in configs)
    tokens = sum(c.tokens for c in configs)
    if step.model_flops is None or not _close(step.model_flops, flops) or step.tokens != tokens:
        problems.append(f"step `{step.identity}` reports {step.model_flops or 0:.3g} model FLOPs and "
                        f"{step.tokens or 0} tokens, but its config needs {flops:.3g} FLOPs and {tokens} tokens "
                        "(recomputed by the bot)")
    return StepBudget(step.identity, flops, tokens), problems


def overrun(tokens: int, model_flops: float, approved: dict[str, Any] | None) -> str | None:
    """Why a finished run is over what was approved (the ledger's trusted plan record), or None."""
    if not approved:
        return None
    over = []
    if approved.get("tokens") and tokens > approved["tokens"]:
        over.append(f"{tokens:,} tokens against {approved['tokens']:,} approved")
    if approved.get("model_flops") and model_flops > approved["model_flops"] * (1 + 1e-6):
        over.append(f"{model_flops:.3g} model FLOPs against {approved['model_flops']:.3g} approved")
    return "; ".join(over) or None


def recompute(plan: Plan) -> TrustedBudget:
    """Trusted totals over every step of the plan (skipped steps included: the plan's `action` is its word too)."""
    steps: list[StepBudget] = []
    problems: list[str] = []
    for step in plan.steps:
        b, p = step_budget(step)
        steps.append(b)
        problems += p
    flops = sum(s.model_flops or 0.0 for s in steps)
    tokens = sum(s.tokens or 0 for s in steps)
    if not _close(plan.total_model_flops, flops) and not problems:
        problems.append(f"the plan's total of {plan.total_model_flops:.3g} model FLOPs is not the sum of its steps "
                        f"({flops:.3g})")
    return TrustedBudget(flops, tokens, steps, problems)
