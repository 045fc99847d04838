"""`openlab train CONFIG --out DIR`."""

from __future__ import annotations

import click


@click.command()
@click.argument("config", type=click.Path(dir_okay=False))
@click.option(
    "--out", "out", required=True, help="Output directory: results.json, checkpoints, metrics.jsonl."
)
def train(config: str, out: str) -> None:
    """Train the model of CONFIG and write results, checkpoints and metrics to --out."""
    from runner.config import load_config
    from runner.train import train as run_training

    run_training(load_config(config), out)
