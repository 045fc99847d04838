"""`/help`: list the commands (generated from the registry)."""

from __future__ import annotations

from bot.commands.context import Context, Result
from bot.github.render import render

NAME = "help"
USAGE = "/help"
WHO = "anyone"
SUMMARY = "show this list"


def run(args: tuple[str, ...], ctx: Context) -> Result:
    from markupsafe import Markup

    from bot.commands.context import REGISTRY

    rows = [{"usage": m.USAGE, "who": m.WHO, "summary": m.SUMMARY} for m in REGISTRY.values()]
    return Result(NAME, True, "available commands", detail=Markup(render("help.md.j2", commands=rows)))
