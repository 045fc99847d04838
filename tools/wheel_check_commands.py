"""Run ``--help`` of every ``openlab`` command and subcommand in one process (used by tools/wheel-check.sh).

Walks the click tree of the installed ``openlab`` so a command added later is covered without editing this
file; any non-zero exit or exception names the command and fails the check.
"""

from __future__ import annotations

import sys

import click
from click.testing import CliRunner

from runner.cli import main


def walk(cmd: click.Command, path: list[str]) -> list[list[str]]:
    found = [path]
    if isinstance(cmd, click.Group):
        for name in sorted(cmd.list_commands(click.Context(cmd))):
            sub = cmd.get_command(click.Context(cmd), name)
            if sub is not None:
                found.extend(walk(sub, [*path, name]))
    return found


def run() -> int:
    runner = CliRunner()
    failed = 0
    paths = walk(main, [])
    for path in paths:
        res = runner.invoke(main, [*path, "--help"], prog_name="openlab")
        if res.exit_code != 0:
            failed += 1
            print(f"FAIL openlab {' '.join(path)} --help (exit {res.exit_code})\n{res.output}", file=sys.stderr)
            if res.exc_info and not isinstance(res.exception, SystemExit):
                import traceback

                traceback.print_exception(*res.exc_info)
    print(f"--help: {len(paths) - failed}/{len(paths)} commands ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run())
