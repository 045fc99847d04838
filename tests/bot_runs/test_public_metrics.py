"""The metrics committed beside a run's results are rebuilt from the PR code's metrics.jsonl, never copied."""

from __future__ import annotations

import json

from bot.runs.results_io import public_metrics


def test_keeps_step_and_finite_numbers_under_plain_names() -> None:
    text = "\n".join([
        json.dumps({"step": 1, "train/loss": 3.5, "time": "2026-01-01", "<img src=x>": 1.0, "ok": True}),
        "not json",
        json.dumps([1, 2]),
        json.dumps({"step": "2", "train/loss": 3.0}),
        '{"step": 3, "train/loss": NaN, "train/lr": 0.001}',
        json.dumps({"step": 4, "eval/val/bpb": 2.5, "nested": {"a": 1}}),
        json.dumps({"step": 5, "note": "only text"}),
    ])
    rows = [json.loads(line) for line in (public_metrics(text) or "").splitlines()]
    assert rows == [{"step": 1, "train/loss": 3.5}, {"step": 3, "train/lr": 0.001}, {"step": 4, "eval/val/bpb": 2.5}]
    assert public_metrics("garbage\n{}") is None


def test_long_runs_are_thinned_evenly_and_keep_their_eval_lines() -> None:
    lines = [json.dumps({"step": s, "train/loss": 10 - s / 1000}) for s in range(5000)]
    lines += [json.dumps({"step": s, "eval/val/bpb": 3 - s / 10000}) for s in range(0, 5000, 500)]
    rows = [json.loads(line) for line in (public_metrics("\n".join(lines), max_lines=100) or "").splitlines()]
    assert len(rows) == 100
    evals = [r for r in rows if "eval/val/bpb" in r]
    train = [r["step"] for r in rows if "train/loss" in r]
    assert len(evals) == 10 and train[0] == 0 and train[-1] == 4999
    gaps = {b - a for a, b in zip(train, train[1:], strict=False)}
    assert max(gaps) - min(gaps) <= 1  # evenly spaced
