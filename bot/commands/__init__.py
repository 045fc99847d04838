"""Slash commands, prow-style: one command per module, registered in :data:`REGISTRY`.

A module defines ``NAME``, ``USAGE``, ``WHO``, ``SUMMARY`` and ``run(args, ctx) -> Result``. `/help` is
generated from the registry, so a new command documents itself.
"""

from __future__ import annotations

from types import ModuleType

from bot.commands.context import MAX_COMMANDS, REGISTRY, Context, PullInfo, Result


def _registry() -> dict[str, ModuleType]:
    from bot.commands import cancel, help, rerun, run, status, verify

    return {m.NAME: m for m in (run, cancel, status, rerun, verify, help)}


REGISTRY.update(_registry())

__all__ = ["MAX_COMMANDS", "REGISTRY", "Context", "PullInfo", "Result"]
