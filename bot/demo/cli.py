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
@click.option(
    "--screenshots",
    default=None,
    type=click.Path(file_okay=False),
    help="Also write PNGs of the index, a run page, an execution page and the PR transcript here.",
)
def demo(workdir: str, steps: int, screenshots: str | None) -> None:
    """Run the whole lab lifecycle locally: preregistration, PR, /run, training on Ray, results, leaderboard."""
    from bot.demo.script import run_demo

    paths = run_demo(Path(workdir).resolve(), steps=steps)
    if screenshots:
        from leaderboard.screenshots import take_screenshots

        pages = {
            "index": paths["site"] / "index.html",
            "run": paths["run_page"],
            "execution": paths["execution"],
            "transcript": paths["transcript"],
        }
        for p in take_screenshots(pages, Path(screenshots)):
            click.echo(f"screenshot: {p}")
