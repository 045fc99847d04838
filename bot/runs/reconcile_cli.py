"""`openlab reconcile`: one reconcile pass (the scheduled Actions workflow), or a loop."""

from __future__ import annotations

import click


@click.command("reconcile")
@click.option("--loop", "loop_s", type=float, default=None, help="Keep reconciling every N seconds.")
def reconcile_cmd(loop_s: float | None) -> None:
    """Follow active runs on Ray and report their results to their PRs (idempotent: safe to run twice)."""
    import threading

    from bot.runs.dispatch import services_from_env
    from bot.runs.reconcile import Reconciler, reconcile_loop
    from runner.logs import setup_logging

    setup_logging()
    reconciler = Reconciler(services_from_env())
    if loop_s:
        reconcile_loop(reconciler, threading.Event(), loop_s)
        return
    counts = reconciler.run_once()
    click.echo(" ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "no active runs")
