"""The sticky comment's chart: real matplotlib output, deterministic, with the run's data and escaped names."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from bot.runs.chart import pareto_svg
from tests.leaderboard.factory import make_results


def test_pareto_svg_is_deterministic_and_escapes_names() -> None:
    others = [make_results(i, bpb=2.0 - i * 0.2, model_flops=10 ** (13 + i), name=f"board-{i}", run_id=f"b{i}")
              for i in range(4)]
    run = make_results(9, bpb=1.1, model_flops=3e14, name='<script>alert(1)</script>&"', run_id="mine")
    svg = pareto_svg(run, others)
    assert svg == pareto_svg(run, others)  # committing it again is a no-op
    root = ET.fromstring(svg.encode())  # well-formed XML: the name is text, not markup
    assert root.tag.endswith("svg") and "<script>" not in svg
    for words in ("model FLOPs (log scale)", "BPB (lower is better)", "Pareto frontier", "1.1000 BPB",
                  "leaderboard (4 runs)"):
        assert words in svg
