"""`openlab train CONFIG --out DIR`: train, then one summary line (BPB, tokens, time, where the results are)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from runner.schema import Results


def summary_line(results: Results, results_path: Path, wall_seconds: float) -> str:
    """The last line `openlab train` prints: what a researcher copies into a PR or a notebook."""
    evalset = next(iter(results.eval), "eval")
    return (f"done: {results.name} · BPB {results.bpb:.4f} on {evalset} · {results.tokens:,} tokens · "
            f"{results.model_flops:.3g} model FLOPs · {results.training_seconds:.1f} s training "
            f"({wall_seconds:.1f} s wall) · results: {results_path}")


@click.command()
@click.argument("config", type=click.Path(dir_okay=False))
@click.option(
    "--out", "out", required=True, help="Output directory: results.json, checkpoints, metrics.jsonl."
)
def train(config: str, out: str) -> None:
    """Train the model of CONFIG and write results, checkpoints and metrics to --out (resumes from a checkpoint
    there). Ends with one line: BPB, tokens, FLOPs, time and the path of results.json."""
    from runner.config import load_config
    from runner.parallel import is_primary
    from runner.train import train as run_training

    start = time.monotonic()
    results = run_training(load_config(config), out)
    if is_primary():
        click.echo(summary_line(results, Path(out) / "results.json", time.monotonic() - start))
