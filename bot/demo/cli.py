"""`openlab demo`."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.option(
    "--workdir",
    default="demo",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where the lab's store, site and transcript go (emptied first).",
)
@click.option(
    "--steps",
    default=200,
    show_default=True,
    type=click.IntRange(min=2),
    help="Training steps of the speedrun (the tests use fewer).",
)
def demo(workdir: str, steps: int) -> None:
    """Run the whole lab lifecycle locally: preregistration, PR, /run, training on Ray, results, leaderboard."""
    from bot.demo.script import run_demo

    run_demo(Path(workdir).resolve(), steps=steps)
