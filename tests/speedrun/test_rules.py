"""The pure parts of `/verify` and records: refusals, the reproduction verdict, the record decision, integrity."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.commands import Context, PullInfo
from bot.commands.verify import run as verify
from bot.config.repo_config import RepoConfig
from bot.forms.linking import ExperimentFile
from bot.runs.reproductions import decide_record, integrity_problems, judge
from runner.reproduction import RecordDecision, Reproduction, SeedRun
from runner.stats import summarize

SR = "experiments/speedrun/fast/fast.py"


def ctx(*, trusted: bool = True, paths: tuple[str, ...] = (SR,), runs: list | None = None,
        config: RepoConfig | None = None) -> Context:
    pull = PullInfo(number=7, head_sha="a" * 40, author="ada", state="open", draft=False, from_fork=False,
                    experiments=tuple(ExperimentFile(path=p, issue=3) for p in paths))
    return Context(repo="lab/x", issue_number=7, sender="maint", trusted=trusted,
                   trust_reason="@eve has read access; write is needed", config=config or RepoConfig(), pull=pull,
                   prereg_status={3: "preregistered"}, approvals=[], runs=runs or [], installation_id=None)


def test_verify_dispatches_one_run_with_the_configured_seeds() -> None:
    res = verify((), ctx(config=RepoConfig.model_validate({"speedrun": {"verify_seeds": 4}})))
    assert res.ok, res.message
    dispatch = [a for a in res.actions if a.type == "dispatch_run"]
    assert len(dispatch) == 1 and dispatch[0].seeds == [0, 1, 2, 3] and dispatch[0].experiment == SR
    assert "4-seed reproduction" in res.message
    # Again at the same SHA: a new attempt, a different run id.
    again = verify((), ctx(runs=[{"run_id": dispatch[0].run_id, "status": "succeeded"}]))
    assert [a.run_id for a in again.actions if a.type == "dispatch_run"] != [dispatch[0].run_id]


def test_verify_refusals_say_why_and_start_nothing() -> None:
    cases = {
        "read access": ctx(trusted=False),
        "no speedrun under `experiments/speedrun/`": ctx(paths=("experiments/exp3_thing.py",)),
        "is still running": ctx(runs=[{"run_id": "olr-x", "status": "running"}]),
    }
    for expect, c in cases.items():
        res = verify((), c)
        assert not res.ok and expect in res.message and not res.actions, res.message
    two = verify((), ctx(paths=(SR, "experiments/speedrun/slow/slow.py")))
    assert not two.ok and "/verify NAME" in two.message
    assert verify(("slow",), ctx(paths=(SR, "experiments/speedrun/slow/slow.py"))).ok


def test_judge() -> None:
    s, ok, why = judge([3.10, 3.11, 3.12], claimed=3.105, tolerance=0.01)
    assert ok and s is not None and s.n == 3 and "within" in why
    _, ok, why = judge([3.10, 3.11, 3.12], claimed=3.50, tolerance=0.01)
    assert not ok and "beyond" in why
    _, ok, why = judge([3.1], claimed=None, tolerance=0.01)
    assert not ok and "single seed is a run" in why
    _, ok, why = judge([3.1, 3.5], claimed=None, tolerance=0.01)
    assert not ok and "seeds disagree" in why


def rep(run_id: str, bpbs: list[float], flops: float, accepted: bool, fp: str = "d1") -> Reproduction:
    return Reproduction(
        run_id=run_id, repo="lab/x", pr=1, sha="b" * 40, experiment=SR, name="fast", track="cpu", author="ada",
        requested_by="maint", seeds=[SeedRun(seed=i, step=f"s{i}", outcome="succeeded", bpb=b, model_flops=flops,
                                             data_fingerprint=fp, eval_sets=["val"]) for i, b in enumerate(bpbs)],
        summary=summarize(bpbs), model_flops=flops, tolerance_bpb=0.01, reproduces=True, verdict="ok",
        record=RecordDecision(accepted=accepted, reason="r", threshold=0.01), created_at=datetime.now(UTC))


def test_record_decision() -> None:
    first = decide_record([3.1, 3.11, 3.12], 1e12, "cpu", [], 0.01)
    assert first.accepted and "first reproduced record" in first.reason
    records = [rep("old", [3.20, 3.21, 3.22], 1e12, True), rep("rejected", [2.0, 2.01], 1e12, False)]
    better = decide_record([3.10, 3.11, 3.12], 1e12, "cpu", records, 0.01)
    assert better.accepted and better.previous_run_id == "old" and better.p_value < 0.01
    worse = decide_record([3.30, 3.31, 3.29], 1e12, "cpu", records, 0.01)
    assert not worse.accepted and "is not lower than record `old`" in worse.reason and worse.p_value > 0.9
    close = decide_record([3.19, 3.215, 3.22], 1e12, "cpu", records, 0.01)
    assert not close.accepted and "not below 0.01" in close.reason
    # A smaller budget has no record yet: the first record at that budget.
    assert "first" in decide_record([3.5, 3.51], 1e11, "cpu", records, 0.01).reason


def test_integrity() -> None:
    seeds = [SeedRun(seed=0, step="a", outcome="succeeded", bpb=3.1, data_fingerprint="d1", eval_sets=["val"]),
             SeedRun(seed=1, step="b", outcome="succeeded", bpb=3.1, data_fingerprint="d2", eval_sets=["other"]),
             SeedRun(seed=2, step="c", outcome="failed", error="boom")]
    problems = integrity_problems(seeds, "a" * 40, {0: "a" * 40, 1: "c" * 40}, "cpu", [rep("old", [3, 3.1], 1, True)])
    text = "; ".join(problems)
    assert "seed 1: eval sets ['other'] are not the track's ['val']" in text
    assert "seed 1: its provenance names commit cccccccccccc" in text
    assert "different data" in text
    ok = [SeedRun(seed=i, step="a", outcome="succeeded", bpb=3.1, data_fingerprint="d1", eval_sets=["val"])
          for i in range(2)]
    assert integrity_problems(ok, "a" * 40, {}, "cpu", [rep("old", [3, 3.1], 1, True)]) == []
    assert "differs from the track's records" in integrity_problems(ok, "a" * 40, {}, "cpu",
                                                                    [rep("old", [3, 3.1], 1, True, fp="d9")])[0]
