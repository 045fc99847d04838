"""Every file in experiments/: `openlab plan` as a user runs it, and a real run with training capped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runner.executor import RunOptions, run_experiment

from .conftest import REPO

EXPERIMENTS = sorted(p for p in (REPO / "experiments").rglob("*.py") if p.name != "__init__.py")
OPENLAB = str(Path(sys.executable).parent / "openlab")


def test_there_are_experiments() -> None:
    names = {p.name for p in EXPERIMENTS}
    assert {"tiny_cpu.py", "exp1_fasttext_filter.py"} <= names


@pytest.mark.parametrize("exp", EXPERIMENTS, ids=lambda p: p.stem)
def test_plan(exp: Path, tmp_path: Path) -> None:
    res = subprocess.run(
        [OPENLAB, "plan", str(exp), "--prefix", str(tmp_path)], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    plan = json.loads(res.stdout)
    assert plan["steps"] and all(s["action"] == "run" for s in plan["steps"])
    trains = [s for s in plan["steps"] if s["kind"] == "train"]
    assert trains and all(s["model_flops"] > 0 and s["tokens"] > 0 for s in trains)
    # every step that spends model FLOPs counts (training, and the LM annotation of a Datashop experiment)
    assert plan["total_model_flops"] == pytest.approx(sum(s["model_flops"] or 0 for s in plan["steps"]))


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.parametrize("exp", EXPERIMENTS, ids=lambda p: p.stem)
def test_run_capped(exp: Path, tmp_path: Path, ray_local: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENLAB_MAX_TRAIN_STEPS", "3")
    report = run_experiment(exp, str(tmp_path), options=RunOptions(log=lambda _m: None, poll_s=0.2))
    assert report.ok, report.failures
    assert {s.outcome for s in report.record.steps} == {"succeeded"}
    if exp.stem == "exp1_fasttext_filter":
        cmp = json.loads((tmp_path / "exp1/compare/v1/comparison.json").read_text())
        assert set(cmp["bpb"]) == {"filtered", "baseline"}
    if exp.stem == "exp13_datashop_pydoc":  # the Datashop chain ran, and its execution page shows every step
        from leaderboard.execution_pages import page_name, write_execution_pages

        [view], _ = write_execution_pages(str(tmp_path), tmp_path / "site")
        assert "annotate" in {s.kind for s in view.steps}, [s.kind for s in view.steps]
        assert {s.status for s in view.steps} == {"succeeded"}
        assert "annotate" in (tmp_path / "site" / "executions" / page_name(view.run_id)).read_text()
    if exp.stem == "tiny_cpu":
        from runner.schema import load_results

        res = load_results(tmp_path / "speedrun/tiny_cpu/results/v1/results.json")
        assert res.track == "cpu" and res.config.train.steps == 3 and res.config.train.seed == 0
