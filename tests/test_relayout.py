"""tools/relayout_bot.py's rewriting rules on small sources (the whole move is tried on a throwaway clone)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
MOVES = {"bot.github": "bot.github.client", "bot.settings": "bot.config.settings", "bot.worker": "bot.ingress.worker",
         "bot.handlers.plan_report": "bot.plans.report"}


def relayout() -> ModuleType:
    spec = importlib.util.spec_from_file_location("relayout_bot", ROOT / "tools" / "relayout_bot.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rewrite(source: str) -> str:
    r = relayout()
    new = r.rewrite_paths(r.rewrite_dotted(source, MOVES, r.variable_offsets(source)), MOVES)
    return r.rewrite_from_package(new, MOVES)


def test_module_references_move_and_variables_named_bot_do_not() -> None:
    source = (
        '"""Uses :mod:`bot.github` (see bot/github.py and tests/bot/github.py)."""\n'
        "from bot.github import GitHubClient\n"
        "from bot import actions as A, worker\n"
        "from bot.handlers import Env, plan_report\n"
        "log = 'openlab.bot.github'\n"
        "def f(bot, monkeypatch):\n"
        "    monkeypatch.setattr('bot.settings.load_settings', None)\n"
        "    return bot.settings.bot_login, bot.worker.start()\n"
    )
    assert rewrite(source) == (
        '"""Uses :mod:`bot.github.client` (see bot/github/client.py and tests/bot/github.py)."""\n'
        "from bot.github.client import GitHubClient\n"
        "from bot import actions as A\n"
        "from bot.ingress import worker\n"
        "from bot.handlers import Env\n"
        "from bot.plans import report as plan_report\n"
        "log = 'openlab.bot.github'\n"
        "def f(bot, monkeypatch):\n"
        "    monkeypatch.setattr('bot.config.settings.load_settings', None)\n"
        "    return bot.settings.bot_login, bot.worker.start()\n"
    )


def test_every_move_lands_in_a_documented_package() -> None:
    r = relayout()
    targets = {new.rpartition(".")[0].replace(".", "/") for new in r.MOVES.values()}
    assert targets == set(r.PACKAGE_DOCS)
    assert len(set(r.MOVES.values())) == len(r.MOVES)


def test_a_module_moved_down_still_finds_files_relative_to_it() -> None:
    r = relayout()
    source = ("A = Path(__file__).resolve().parent.parent / '.github'\n"
              "B = Path(__file__).parents[1]\nC = Path(__file__).parent / 'x.json'\n")
    assert r.deepen_file_refs(source, 1) == (
        "A = Path(__file__).resolve().parent.parent.parent / '.github'\n"
        "B = Path(__file__).parents[2]\nC = Path(__file__).parent.parent / 'x.json'\n")
    assert r.deepen_file_refs(source, 0) == source
