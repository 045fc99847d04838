"""Make untrusted text (issue bodies, file names, plan warnings, usernames) safe to post as the bot.

Posted text must not ping people (`@user`), cross-reference issues (`#12`), smuggle a hidden marker that could
make another comment look like ours (`<!-- openlab:...`), or inject HTML. GitHub rejects bodies over 65,536
characters, so everything posted is cut well below that with a visible note.
"""

from __future__ import annotations

import re

MAX_BODY = 60_000
_ZWSP = "\u200b"
_MENTION = re.compile(r"(?<![\w.])@(?=[A-Za-z0-9])")
_REF = re.compile(r"(?<![\w&])#(?=\d)")


def untrusted(text: object, limit: int = 2_000) -> str:
    """Escape one piece of untrusted text for inline use in Markdown."""
    s = str(text)
    if len(s) > limit:
        s = s[:limit] + "…"
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MENTION.sub("@" + _ZWSP, s)
    return _REF.sub("#" + _ZWSP, s)


def truncate_body(body: str, limit: int = MAX_BODY) -> str:
    if len(body) <= limit:
        return body
    note = "\n\n…(truncated: the full report was longer than GitHub allows in one comment)"
    return body[: limit - len(note)] + note
