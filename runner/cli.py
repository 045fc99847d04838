"""The one console command, ``openlab``.

Each top-level package defines its own subcommands and exposes them through the ``openlab.commands`` entry
point group (see pyproject.toml), so ``runner`` never imports ``bot`` or ``leaderboard``. Every user-facing
error (:class:`runner.errors.OpenlabError`) is printed as one ``error: ...`` line with exit code 2.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import entry_points

import click

from runner.errors import OpenlabError


class UserError(click.ClickException):
    exit_code = 2

    def show(self, file=None) -> None:  # type: ignore[no-untyped-def]
        click.echo(f"error: {self.message}", err=True)


# `openlab --help` lists commands by who uses them; a command not named here (a new plugin) goes under "other".
HELP_GROUPS: dict[str, tuple[str, ...]] = {
    "For researchers": ("train", "flops", "plan", "run", "submit", "status", "cancel", "leaderboard", "browse",
                        "reports", "demo"),
    "For operators (the bot, the cluster, the keys)": ("serve", "event", "reconcile", "sandbox", "keygen",
                                                       "config-reference"),
}


class OpenlabGroup(click.Group):
    """A click group that turns OpenlabError into one clean line instead of a traceback, lists its commands
    grouped for researchers and operators, and answers an unknown command with the nearest known one."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = [n for n in self.list_commands(ctx) if not (c := self.get_command(ctx, n)) or not c.hidden]
        placed: set[str] = set()
        limit = 120  # write_dl wraps; a first sentence cut mid-way says less than two lines
        for title, members in [*HELP_GROUPS.items(), ("Other", tuple(names))]:
            rows = []
            for name in members:
                cmd = self.get_command(ctx, name)
                if cmd is None or name in placed or cmd.hidden:
                    continue
                placed.add(name)
                rows.append((name, cmd.get_short_help_str(limit)))
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)

    def resolve_command(self, ctx: click.Context, args: list[str]):  # type: ignore[no-untyped-def]
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            import difflib

            near = difflib.get_close_matches(name, self.list_commands(ctx), n=1)
            hint = f" (did you mean `openlab {near[0]}`?)" if near else ""
            ctx.fail(f"no such command {name!r}{hint}; `openlab --help` lists them")
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except OpenlabError as err:
            raise UserError(str(err)) from None


@click.group(cls=OpenlabGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="openlab")
def main() -> None:
    """openlab: preregistered experiments, a GitHub bot, JAX training on Ray, and a speedrun leaderboard."""


@main.command()
@click.argument("config", type=click.Path(dir_okay=False))
def flops(config: str) -> None:
    """Print params, forward FLOPs per token and whole-run model FLOPs of CONFIG as JSON."""
    from runner.config import load_config
    from runner.flops import estimate

    click.echo(json.dumps(estimate(load_config(config)).model_dump(), indent=2))


def commands() -> list[click.Command]:
    """runner's subcommands other than those defined above: train, and the executor's."""
    from runner.datashop_cli import commands as datashop_commands
    from runner.executor_cli import commands as executor_commands
    from runner.train_cli import train

    return [train, *executor_commands(), *datashop_commands()]


def _load_plugins() -> None:
    for ep in entry_points(group="openlab.commands"):
        for cmd in ep.load()():
            if cmd.name not in main.commands:
                main.add_command(cmd)


_load_plugins()


if __name__ == "__main__":
    sys.exit(main())
