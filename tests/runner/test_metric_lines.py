"""One reader of metrics.jsonl for every consumer: objects in order, other lines counted, blank lines ignored."""

from __future__ import annotations

from bot.runs.report import loss_points
from runner.tracking import read_metric_lines


def test_read_metric_lines() -> None:
    text = '{"step": 1, "train/loss": 3.0}\n\nnot json\n[1, 2]\n{"step": 2, "train/loss": 2.5}\n"text"\n'
    rows, bad = read_metric_lines(text)
    assert rows == [{"step": 1, "train/loss": 3.0}, {"step": 2, "train/loss": 2.5}] and bad == 3


def test_the_comments_loss_curve_reads_through_it() -> None:
    text = "\n".join(f'{{"step": {s}, "train/loss": {10 - s / 10}}}' for s in range(100)) + "\nbad\n"
    pts = loss_points(text, max_points=10)
    assert len(pts) == 10 and pts[0] == [0.0, 10.0] and pts[-1] == [99.0, 10 - 9.9]
