"""`openlab` subcommands defined by the leaderboard package."""

from __future__ import annotations

import click


def commands() -> list[click.Command]:
    return []
