"""Reading a reproduction's seeds from the executor's record (a failed seed is reported, the others kept), the
reproduction steps, and the comment a partial reproduction gets."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from markupsafe import Markup

from bot.github.render import marker, render
from runner.config import load_config
from runner.errors import ConfigError
from runner.executor.records import ExperimentRecord, ExperimentStep, LaunchInfo
from runner.reproduction import SEEDS_ENV, Reproduction, parse_seeds, read_seeds
from runner.schema import dumps_results
from runner.speedrun import default_speedrun
from runner.stats import summarize

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "leaderboard"))
from factory import make_results  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_seeds_env_turns_a_speedrun_into_n_seeds(monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(ROOT / "experiments" / "speedrun" / "tiny_cpu" / "config.yaml")
    assert [s.name for s in default_speedrun("t", config)][1:] == ["speedrun/t", "speedrun/t/results"]
    monkeypatch.setenv(SEEDS_ENV, "0,1,2")
    steps = default_speedrun("t", config)
    trains = [s for s in steps if s.kind == "train"]
    assert [s.name for s in trains] == ["speedrun/t/seed0", "speedrun/t/seed1", "speedrun/t/seed2"]
    assert [s.config.run.train.seed for s in trains] == [0, 1, 2]
    assert len({s.fingerprint for s in trains}) == 3 and steps[0].name == "tokenized/pydoc-byte"
    for bad in ("", "a,b", "1,1", "-1", ",".join(map(str, range(20)))):
        with pytest.raises(ConfigError, match=SEEDS_ENV):
            parse_seeds(bad)
    assert os.environ[SEEDS_ENV] == "0,1,2"


def test_failed_seed_is_reported_and_the_others_kept(tmp_path: Path) -> None:
    prefix = str(tmp_path)
    steps = []
    for seed, ok in ((0, True), (1, False), (2, True)):
        train = tmp_path / f"speedrun/t/seed{seed}-abc"
        res = tmp_path / f"speedrun/t/seed{seed}/results-def"
        steps.append(ExperimentStep(identity=f"speedrun/t/seed{seed}@v1", kind="train", output_path=str(train),
                                    action="run", reason="new", outcome="succeeded" if ok else "failed",
                                    error=None if ok else "NaN loss at step 3 <b>@everyone</b>"))
        steps.append(ExperimentStep(identity=f"speedrun/t/seed{seed}/results@v1", kind="results",
                                    output_path=str(res), action="run", reason="new",
                                    outcome="succeeded" if ok else "blocked"))
        if ok:
            res.mkdir(parents=True)
            (res / "results.json").write_text(dumps_results(make_results(seed, bpb=3.0 + seed / 100)))
    record = ExperimentRecord(launch=LaunchInfo(run_id="olr-x", experiment="e.py", prefix=prefix), steps=steps)
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "olr-x.json").write_text(record.model_dump_json())
    got = read_seeds(prefix, "olr-x")
    assert [(s.seed, s.outcome, d is not None) for s, d in got] == [(0, "succeeded", True), (1, "failed", False),
                                                                   (2, "succeeded", True)]
    assert got[1][0].error == "NaN loss at step 3 <b>@everyone</b>"

    seeds = [s.model_copy(update={"bpb": 3.0 + s.seed / 100} if d else {}) for s, d in got]
    doc = Reproduction(run_id="olr-x", repo="lab/x", pr=1, sha="a" * 40, experiment="e.py", name="t", track="cpu",
                       author="ada", requested_by="maint", seeds=seeds, summary=summarize([3.0, 3.02]),
                       tolerance_bpb=0.01, reproduces=False, verdict="seeds disagree", created_at=datetime.now(UTC))
    body = render("reproduction.md.j2", marker=Markup(marker("run", "olr-x")), rep=doc, run={}, reason=None)
    assert "2 of 3 succeeded" in body and "| 1 | failed: NaN loss at step 3" in body
    assert "<b>" not in body and "@everyone" not in body  # the PR's output is escaped
    assert "not a record candidate" in body and "**3.0100** ±" in body
