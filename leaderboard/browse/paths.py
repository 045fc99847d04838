"""Path confinement: the browser serves nothing from outside the configured store prefix.

A user path is always *relative* to the prefix. Absolute paths, URL schemes, ``..`` segments (also when
percent-encoded or hidden behind backslashes), NUL bytes and symlinks that resolve outside the prefix are
refused with :class:`PathRefused`, whose message is safe to show.
"""

from __future__ import annotations

import os
import posixpath
import re
from urllib.parse import unquote

from runner.store import is_local, local_path


class PathRefused(ValueError):
    """The requested path is outside the store prefix or malformed."""


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def confine(prefix: str, user_path: str) -> str:
    """Return the full URL/path of ``user_path`` inside ``prefix``, or raise PathRefused."""
    raw = user_path or ""
    decoded = raw
    for _ in range(3):  # undo double/triple encoding such as %252e%252e
        nxt = unquote(decoded)
        if nxt == decoded:
            break
        decoded = nxt
    if "\x00" in decoded:
        raise PathRefused("path contains a NUL byte")
    if "\\" in decoded:
        raise PathRefused("backslashes are not allowed in paths")
    if _SCHEME.match(decoded) or decoded.startswith("//"):
        raise PathRefused("give a path relative to the store, not a URL")
    if decoded.startswith("/") or decoded.startswith("~"):
        raise PathRefused("give a path relative to the store, not an absolute path")
    parts = [p for p in decoded.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise PathRefused("'..' is not allowed in paths")
    rel = posixpath.join(*parts) if parts else ""
    base = prefix.rstrip("/")
    full = f"{base}/{rel}" if rel else base
    if is_local(prefix):
        root = os.path.realpath(local_path(base))
        real = os.path.realpath(local_path(full))
        if real != root and not real.startswith(root + os.sep):
            raise PathRefused("path leaves the store through a symbolic link")
    return full


def relative(prefix: str, full: str) -> str:
    base = prefix.rstrip("/")
    return full[len(base) :].lstrip("/") if full.startswith(base) else full
