"""The small chart of the sticky comment: this run's BPB vs model FLOPs against the leaderboard's frontier.

Rendered server-side by matplotlib as SVG (text, so it is committed beside ``results.json`` through the contents
API like any file, and diffs as text). The output is deterministic for the same runs (fixed hash salt, no date
metadata), so committing it again is a no-op. Run names are data: matplotlib writes them as escaped SVG text,
and GitHub shows the file as an image, which runs no script.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from leaderboard.frontier import pareto_frontier
from runner.schema import Results

CHART_NAME = "pareto.svg"


def pareto_svg(run: Results, others: Sequence[Results]) -> str:
    """BPB (lower is better) vs model FLOPs, log x: the other runs, the frontier after this run, this run."""
    import matplotlib

    matplotlib.use("Agg")  # no display on a server; savefig picks the SVG writer by format
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "openlab"
    matplotlib.rcParams["svg.fonttype"] = "none"  # real <text>: smaller, searchable, escaped by the writer
    frontier = pareto_frontier([*others, run])
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    try:
        if others:
            ax.scatter([r.model_flops for r in others], [r.bpb for r in others], s=18, color="#9aa5b1",
                       label=f"leaderboard ({len(others)} runs)", zorder=2)
        ax.step([r.model_flops for r in frontier], [r.bpb for r in frontier], where="post", color="#1f6feb",
                linewidth=1.5, label="Pareto frontier", zorder=3)
        ax.scatter([run.model_flops], [run.bpb], s=90, marker="*", color="#d1242f", zorder=4,
                   label=f"this run: {run.name[:40]}")
        ax.annotate(f"{run.bpb:.4f} BPB", (run.model_flops, run.bpb), textcoords="offset points", xytext=(8, 6),
                    fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("model FLOPs (log scale)")
        ax.set_ylabel("BPB (lower is better)")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8, loc="upper right")
        ax.set_title("BPB vs FLOPs", fontsize=10)
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "openlab (matplotlib)"})
    finally:
        plt.close(fig)
    return buf.getvalue()
