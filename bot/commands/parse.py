"""Find slash commands in a comment body.

Rules (prow's trigger plugin, plus what its users asked for): a command starts a line (up to 3 spaces of
indent) of *visible* text: lines inside fenced code (``` or ~~~), indented code (4+ spaces or a tab after a
blank line), `>` quotes, HTML comments (`<!-- ... -->`, which GitHub does not show) and collapsed
`<details>` blocks are ignored, so a command cannot hide where a reviewer would not see it; unknown `/words` are ignored (paths at line start are prose); several commands per
comment run in order, duplicates once, at most MAX_COMMANDS (the rest are reported as skipped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.commands.context import MAX_COMMANDS

_CMD = re.compile(r"^ {0,3}/([a-z][a-z0-9_-]*)(?:[ \t]+(.*?))?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)  # an unclosed comment hides the rest, as GitHub shows it
_DETAILS_OPEN = re.compile(r"<details\b", re.I)
_DETAILS_CLOSE = re.compile(r"</details\s*>", re.I)


@dataclass(frozen=True)
class Invocation:
    name: str
    args: tuple[str, ...]


def visible_lines(body: str) -> list[str]:
    out: list[str] = []
    fence: str | None = None
    prev_blank = True
    details = 0
    text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), body.replace("\r\n", "\n"))
    for line in text.split("\n"):
        if fence is None:
            before = details
            details = max(0, details + len(_DETAILS_OPEN.findall(line)) - len(_DETAILS_CLOSE.findall(line)))
            if before or details:
                continue
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            prev_blank = False
            continue
        if m:
            fence = m.group(1)
            continue
        if line.lstrip().startswith(">"):
            prev_blank = False
            continue
        if prev_blank and (line.startswith("    ") or line.startswith("\t")):
            continue  # indented code block (continues while lines stay indented)
        prev_blank = not line.strip()
        out.append(line)
    return out


def find_commands(body: str | None, known: set[str]) -> tuple[list[Invocation], int]:
    """(commands to run, number skipped because of the cap)."""
    found: list[Invocation] = []
    skipped = 0
    for line in visible_lines(body or ""):
        m = _CMD.match(line)
        if not m or m.group(1) not in known:
            continue
        inv = Invocation(m.group(1), tuple((m.group(2) or "").split()[:5]))
        if inv in found:
            continue
        if len(found) >= MAX_COMMANDS:
            skipped += 1
            continue
        found.append(inv)
    return found, skipped
