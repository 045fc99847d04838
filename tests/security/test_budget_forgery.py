"""A budget the PR cannot forge: an experiment that patches the FLOPs estimator while it is being planned reports
3 FLOPs for a run of ~1e21; the bot recomputes FLOPs from the plan's step configs (data) with its own
`runner.flops`, fails the plan check against the preregistered 3e16, records the true figures, and the dispatcher
refuses the run. The trainer refuses to train past the approved token count; the reconciler flags an overrun."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.runs.budget import overrun, recompute
from bot.runs.dispatch import RayDispatcher, attach_to_bot
from bot.runs.jobs import RayJobs
from runner.config import RunConfig
from runner.errors import ConfigError
from runner.flops import estimate
from runner.schema import Plan
from runner.train import check_token_budget
from tests.bot import conftest as bot_fixtures
from tests.bot.conftest import Lab
from tests.bot.helpers import REPO, bot_comments, experiment_body

sandbox, app_key, lab = bot_fixtures.sandbox, bot_fixtures.app_key, bot_fixtures.lab  # the bot tests' fixtures

BIG = {"name": "big", "model": {"hidden_dim": 2048, "intermediate_dim": 8192, "num_layers": 24, "num_heads": 16,
                                "num_kv_heads": 16, "seq_len": 2048, "vocab_size": 50304},
       "train": {"batch_size": 256, "steps": 20000}}

FORGING_EXPERIMENT = '''
import runner.flops
from runner.config import RunConfig
from runner.executor import Step, StepContext
from runner.flops import FlopsEstimate


def _cheap(cfg):  # the attack: planning runs this file, so it can patch the estimator the plan uses
    return FlopsEstimate(params=1, model_flops_per_token=1.0, tokens=1, model_flops=3.0)


runner.flops.estimate = _cheap


def train(cfg: RunConfig, ctx: StepContext) -> dict:
    return {}


STEPS = [Step("expNUM/big", train, RunConfig.model_validate(BIG), version="v1", kind="train")]
'''


def test_patched_estimator_is_refused_against_the_preregistered_budget(lab: Lab) -> None:
    services = attach_to_bot(lab.bot, backend=RayJobs(address="http://127.0.0.1:9"))  # never reached: refused
    d = lab.driver
    n = d.open_issue(REPO, "alice", "[Experiment]: cheap, honestly", experiment_body(flops="3e16"),
                     labels=["experiment"])
    lab.settle()
    path = f"experiments/exp{n:03d}_big.py"
    source = FORGING_EXPERIMENT.replace("NUM", str(n)).replace("BIG)", f"{BIG!r})")
    pr = d.open_pull(REPO, "alice", "big", {path: source}, "Big", f"Preregistration: #{n}", fork_owner="alice")
    lab.settle(timeout=90)
    truth = estimate(RunConfig.model_validate(BIG))
    assert truth.model_flops > 1e20

    t = d.thread(REPO, pr)
    [check] = t["check_runs"]
    assert check["conclusion"] == "failure"
    body = bot_comments(t, "plan")[0]["body"]
    assert "reports 3 model FLOPs and 1 tokens" in body and f"{truth.model_flops:.3g}" in body
    assert f"plans {truth.model_flops:.3g} model FLOPs (recomputed by the bot), over the budget of 3e+16" in body
    record = lab.bot.ledger.plan(REPO, t["head_sha"], path)
    assert record["model_flops"] == truth.model_flops and record["tokens"] == truth.tokens and record["error"]

    d.comment(REPO, pr, "maintainer", "/run")
    lab.settle()
    [run] = lab.bot.ledger.runs(REPO, pr)
    RayDispatcher(services).try_submit(run["run_id"])
    run = lab.bot.ledger.run(run["run_id"])
    assert run["status"] == "refused" and "reports 3 model FLOPs" in run["detail"]


def test_recompute_ignores_the_plans_numbers() -> None:
    step = {"name": "s", "version": "v1", "identity": "s@v1", "kind": "train", "fingerprint": "0", "config": {"run": BIG},
            "dependencies": [], "output_path": "/x", "action": "run", "reason": "new", "model_flops": 3.0, "tokens": 1}
    plan = Plan(experiment="e.py", prefix="/p", steps=[step], total_model_flops=3.0, total_tokens=1)
    budget = recompute(plan)
    truth = estimate(RunConfig.model_validate(BIG))
    assert (budget.model_flops, budget.tokens) == (truth.model_flops, truth.tokens) and budget.problems
    hidden = plan.model_copy(update={"steps": [plan.steps[0].model_copy(update={"config": {"x": "no run config"}})]})
    assert "holds no run config" in recompute(hidden).problems[0]


def test_trainer_stops_at_the_approved_tokens_and_reconciler_flags_overruns(monkeypatch: pytest.MonkeyPatch,
                                                                             tmp_path: Path) -> None:
    cfg = RunConfig.model_validate(BIG)
    monkeypatch.setenv("OPENLAB_APPROVED_TOKENS", str(cfg.tokens))
    check_token_budget(cfg)  # exactly the approved count: allowed
    monkeypatch.setenv("OPENLAB_APPROVED_TOKENS", str(cfg.tokens - 1))
    with pytest.raises(ConfigError, match="over the .* approved"):
        check_token_budget(cfg)
    from runner.train import train

    with pytest.raises(ConfigError, match="OPENLAB_APPROVED_TOKENS"):
        train(cfg, str(tmp_path / "out"))  # refused before any data, model or file is touched
    assert not (tmp_path / "out").exists()
    approved = {"tokens": 1000, "model_flops": 1e12}
    assert overrun(1000, 1e12, approved) is None
    assert "2,000 tokens against 1,000 approved" in (overrun(2000, 1e12, approved) or "")
