"""The one set of functions that make PR-supplied text safe to post as the bot (comments, check runs, pages).

Untrusted text is anything a PR or a run can influence: file names and paths, plan error lines and warnings, step
names, results fields, job logs, usernames, issue bodies. Posted as the bot it must not

- inject HTML (``<script>``, ``<img>``, ``<details>``): ``& < > "`` are escaped;
- ping people or cross-reference issues (``@user``, ``#12``): a zero-width space breaks the reference;
- smuggle a hidden marker (``<!-- openlab:... -->``) that makes a comment look like one of ours;
- render images or links (``![x](y)``, ``[x](y)``, ``<https://...>``): brackets are backslash-escaped, ``<``
  is an entity;
- break out of the code span or table cell it sits in: a code span's fence is longer than any backtick run inside.

Which function: :func:`untrusted` for running text, :func:`code` for a name or path shown as code, :func:`fenced`
for a log or a block of output, :func:`cell` for a Markdown table cell. Each returns ``Markup``-safe text for the
templates; ``Markup`` itself is only for text the bot wrote. GitHub rejects bodies over 65,536 characters, so
everything posted is cut well below that with a visible note (:func:`truncate_body`).
"""

from __future__ import annotations

import re

from markupsafe import Markup

MAX_BODY = 60_000
_ZWSP = "\u200b"
_MENTION = re.compile(r"(?<![\w.])@(?=[A-Za-z0-9])")
_REF = re.compile(r"(?<![\w&])#(?=\d)")
# Backticks stay: bot sentences wrap untrusted parts in code spans, and a span opened by the text itself holds only
# text that is already escaped. Names shown as code go through `code`, which the text cannot leave.
_MD_SPECIAL = re.compile(r"([\\\[\]|])")
_BACKTICKS = re.compile(r"`+")


def _cut(text: object, limit: int) -> str:
    s = str(text)
    return s[:limit] + "…" if len(s) > limit else s


def _no_refs(s: str) -> str:
    s = _MENTION.sub("@" + _ZWSP, s)
    s = _REF.sub("#" + _ZWSP, s)
    return s.replace("<!--", "<" + _ZWSP + "!--")


def untrusted(text: object, limit: int = 2_000) -> str:
    """Escape one piece of untrusted text for running Markdown: no HTML, mentions, references, links, images."""
    s = _MD_SPECIAL.sub(r"\\\1", _cut(text, limit))
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return _no_refs(s)


def code(text: object, limit: int = 300) -> Markup:
    """Untrusted text as one inline code span it cannot leave (a longer backtick fence, one line)."""
    s = _no_refs(_cut(text, limit).replace("\r", " ").replace("\n", " "))
    longest = max((len(m) for m in _BACKTICKS.findall(s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    return Markup(f"{fence}{pad}{s}{pad}{fence}")


def fenced(text: object, limit: int = 6_000, lang: str = "text") -> Markup:
    """A code block the text cannot close: one backtick more than its longest backtick run (tail kept)."""
    s = _no_refs(str(text)[-limit:])
    longest = max((len(m) for m in _BACKTICKS.findall(s)), default=0)
    fence = "`" * max(3, longest + 1)
    return Markup(f"{fence}{lang}\n{s}\n{fence}")


def cell(text: object, limit: int = 200) -> Markup:
    """Untrusted text made safe for one Markdown table cell (no pipes, no line breaks)."""
    return Markup(untrusted(text, limit).replace("\r", " ").replace("\n", " "))


def truncate_body(body: str, limit: int = MAX_BODY) -> str:
    if len(body) <= limit:
        return body
    note = "\n\n…(truncated: the full report was longer than GitHub allows in one comment)"
    return body[: limit - len(note)] + note
