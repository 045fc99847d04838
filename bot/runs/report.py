"""Render a run's comment (status, then results table and loss curve) and its Pareto update.

Everything that comes from a results file or a job log is attacker-influenced (the PR's code wrote it): strings
go through the templates' default escaping plus :func:`cell` for table cells, links only when their scheme is
http(s), and log text only inside a fence longer than any backtick run it contains. Numbers are formatted here.

The loss curve is a Mermaid ``xychart-beta`` block, which GitHub renders as a chart inside the comment with no
image hosting (CML's default of uploading plots to a public asset server is what we avoid), with a Unicode
sparkline beside it for clients that do not render Mermaid.
"""

from __future__ import annotations

import math
from typing import Any

from markupsafe import Markup

from bot.github.escape import cell, code, fenced, untrusted
from bot.github.render import fmt_flops, render_comment
from bot.runs.state import RunReport
from leaderboard.frontier import ParetoUpdate, RunRef
from leaderboard.load import safe_url
from runner.schema import Results
from runner.tracking import read_metric_lines

ICONS = {"queued": "⏳", "running": "🚀", "succeeded": "✅", "failed": "❌", "cancelled": "🚫", "refused": "🚫"}
_SPARK = "▁▂▃▄▅▆▇█"


def link(label: str, url: str | None) -> Markup | None:
    safe = safe_url(url)
    if not safe:
        return None
    href = safe.replace("(", "%28").replace(")", "%29").replace(" ", "%20").replace("|", "%7C")
    return Markup(f"[{untrusted(label, 80)}]({untrusted(href, 500)})")


def loss_points(metrics_text: str, max_points: int = 40) -> list[list[float]]:
    """(step, loss) pairs from a metrics.jsonl, downsampled evenly to at most ``max_points``."""
    pts: list[list[float]] = []
    for rec in read_metric_lines(metrics_text)[0]:
        loss = next((rec[k] for k in ("train/loss", "loss", "train_loss") if k in rec), None)
        step = rec.get("step")
        if isinstance(loss, int | float) and isinstance(step, int | float) and math.isfinite(loss):
            pts.append([float(step), float(loss)])
    if len(pts) > max_points:
        stride = (len(pts) - 1) / (max_points - 1)
        pts = [pts[round(i * stride)] for i in range(max_points)]
    return pts


def mermaid_curve(points: list[list[float]]) -> str:
    losses = [p[1] for p in points]
    lo, hi = min(losses), max(losses)
    pad = (hi - lo) * 0.05 or 0.1
    steps = ", ".join(str(int(p[0])) for p in points)
    values = ", ".join(f"{v:.4f}" for v in losses)
    return (
        "xychart-beta\n"
        '    title "training loss"\n'
        f"    x-axis [{steps}]\n"
        f'    y-axis "loss" {lo - pad:.4f} --> {hi + pad:.4f}\n'
        f"    line [{values}]"
    )


def sparkline(points: list[list[float]]) -> str:
    losses = [p[1] for p in points]
    lo, hi = min(losses), max(losses)
    span = hi - lo or 1.0
    return "".join(_SPARK[min(7, int((v - lo) / span * 7.999))] for v in losses)


def _num(v: float | int | None, fmt: str = "{:.4f}") -> str:
    return "n/a" if v is None else fmt.format(v)


def _results_ctx(r: Results) -> dict[str, Any]:
    rows = [
        ("BPB (primary eval set)", f"**{r.bpb:.4f}**"),
        ("model FLOPs", fmt_flops(r.model_flops)),
        ("hardware FLOPs", fmt_flops(r.hardware_flops)),
        ("MFU", "n/a (device peak unknown)" if r.mfu is None else f"{r.mfu:.1%}"),
        ("params", f"{r.params:,}"),
        ("tokens", f"{r.tokens:,}"),
        ("training time", f"{r.training_seconds:.1f} s"),
        ("device", f"{r.flops.chips} × {r.flops.device_kind}"),
        ("FLOPs formula", r.flops.formula),
    ]
    evals = [
        {"name": cell(k, 80), "bpb": f"{v.bpb:.4f}", "loss": f"{v.loss:.4f}", "bytes": f"{v.bytes:,}",
         "tokens": f"{v.tokens:,}"}
        for k, v in r.eval.items()
    ]
    return {
        "name": cell(r.name, 100), "track": code(r.track, 60),
        "rows": [(Markup(a), cell(b)) for a, b in rows], "evals": evals,
    }


def render_run_comment(run: dict[str, Any], report: RunReport, *, status: str, status_line: str,
                       notice: str | None = None, attachment: str | None = None) -> str:
    results = Results.model_validate(report.results) if report.results else None
    wandb = link("W&B run", results.tracking.wandb_url) if results else None
    ctx: dict[str, Any] = {
        "icon": ICONS.get(status, "•"), "run_id": run["run_id"], "status": status, "status_line": status_line,
        "experiment": run["experiment"], "sha": run["sha"], "attempt": run["attempt"],
        "requested_by": run["requested_by"],
        "wandb": wandb or link("W&B run", report.wandb_url),
        "execution": Markup(" · ").join(
            x for x in (link("execution page", report.execution_url), link("Ray job", report.dashboard_url)) if x
        ) or None,
        "provenance": link("experiment record", report.record_url),
        "notice": notice or (Markup(f"⚠️ **budget_overrun**: {untrusted(report.budget_overrun)}.")
                             if report.budget_overrun else None), "results": _results_ctx(results) if results else None,
        "curve": None, "failure": None, "log_tail": None, "commit_note": report.commit_note,
        "attachment": fenced(attachment) if attachment else None,
        "attested": False, "signer": "", "attest_note": "",
    }
    if results:
        att = results.attestation
        ctx["attested"] = bool(att and att.signature)
        ctx["signer"] = att.signer if att else ""
        ctx["attest_note"] = report.reason or ""
        if report.metrics:
            ctx.update(curve=Markup(mermaid_curve(report.metrics)), sparkline=sparkline(report.metrics),
                       first_loss=f"{report.metrics[0][1]:.3f}", last_loss=f"{report.metrics[-1][1]:.3f}",
                       points=len(report.metrics))
    if status in ("failed", "cancelled", "refused") and report.reason:
        ctx["failure"] = report.reason
        ctx["log_tail"] = fenced(report.log_tail) if report.log_tail else None
    return render_comment("run", run["run_id"], **ctx)


def _refs(refs: list[RunRef], more: int = 0) -> Markup | None:
    if not refs:
        return None
    parts = [f"{untrusted(r.name, 60)} ({r.bpb:.4f} BPB, {fmt_flops(r.flops)})" for r in refs[:10]]
    extra = len(refs) - 10 + more
    return Markup(", ".join(parts) + (f" and {extra} more" if extra > 0 else ""))


def render_pareto(update: ParetoUpdate, results: Results, *, key: str, others: list[Results],
                  chart: Markup | None = None) -> str:
    """The Pareto part of the sticky comment, with the BPB delta against the current record (the best BPB of the
    leaderboard, any FLOPs). No path of the bot's machine appears: only counts and run names."""
    names = {t.track_id: t.track_name for t in update.tracks}
    bpb_track = update.bpb_track
    record = min(others, key=lambda r: (r.bpb, r.run_id), default=None)
    delta = None
    if record is not None:
        delta = {"value": f"{results.bpb - record.bpb:+.4f}", "better": results.bpb < record.bpb,
                 "name": cell(record.name, 100), "bpb": f"{record.bpb:.4f}", "flops": fmt_flops(record.model_flops)}
    return render_comment(
        "pareto", key,
        run_id=key, name=cell(results.name, 100), on_frontier=update.on_frontier,
        axis=update.x.replace("_", " "), flops=fmt_flops(update.flops), bpb=f"{update.bpb:.4f}",
        frontier_size=update.frontier_size, dominated_count=len(update.dominated_by),
        bpb_track={"rank": bpb_track.rank, "of": bpb_track.of, "name": cell(bpb_track.track_name)} if bpb_track else None,
        tracks=[{"name": cell(names.get(t.track_id, t.track_id)), "rank": t.rank, "of": t.of} for t in update.tracks],
        beats=_refs(update.beats, update.beats_count - len(update.beats)), beats_count=update.beats_count,
        displaced=_refs(update.displaced), dominated_by=_refs(update.dominated_by),
        compared=len(others), record=delta, chart=chart,
    )
