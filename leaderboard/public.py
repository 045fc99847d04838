"""What the public site may show of a value that was written on a lab's machine: local folders shortened.

A run's config and its steps' resolved configs name folders of the machine that ran them (a token cache under the
store, ``/home/ray/...``, ``/tmp/...``). They say nothing to a reader and tell the world how the lab's machines are
laid out, so every page, ``runs.json`` and the inlined table show a local location as ``…/`` plus its last two
parts. Bucket and web URLs (``gs://``, ``s3://``, ``https://``, ``memory://``) are kept: they are where a reader
would look. This is rendering only: a run's ``results.json`` (signed) is never changed; the original is in the
lab's repository.
"""

from __future__ import annotations

import json
import re
from typing import Any

# A string that is a local location: absolute POSIX path with two or more parts, ~/..., file://..., C:\... or C:/...
_LOCAL = re.compile(r"^(?:file://|~[/\\]|/(?!/)[^/\s]+/|[A-Za-z]:[\\/])")
# The same inside JSON text: a string literal in value position (after ':', '[' or ','; a quote inside a string is
# always escaped, so it never follows one of those directly) whose text starts like one.
_LOCAL_LITERAL = re.compile(r'([:\[,]\s*)"((?:file://|~/|/(?!/)[^/\s"\\]+/|[A-Za-z]:(?:\\\\|/))(?:[^"\\]|\\.)*)"')

_DRIVE = re.compile(r'"[A-Za-z]:(?:\\\\|/)')


def public_path(text: str) -> str:
    """``/tmp/demo/store/tokenized/v1`` -> ``…/tokenized/v1``; anything that is not a local location as is."""
    if not _LOCAL.match(text):
        return text
    parts = [p for p in re.split(r"[\\/]+", text.removeprefix("file://")) if p and not re.fullmatch(r"[A-Za-z]:", p)]
    return "…/" + "/".join(parts[-2:])


def public_value(value: Any) -> Any:
    """``value`` (JSON-like) with every string that is a local location shortened by :func:`public_path`."""
    if isinstance(value, str):
        return public_path(value)
    if isinstance(value, dict):
        return {k: public_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [public_value(v) for v in value]
    return value


def public_json(text: str) -> str:
    """JSON text with every string literal that is a local location shortened (fast: no parse of the document,
    for ``runs.json`` of tens of thousands of runs)."""

    if '"/' not in text and '"~' not in text and '"file:' not in text and not _DRIVE.search(text):
        return text  # the common case, found by fast scans

    def shorten(m: re.Match[str]) -> str:
        return m.group(1) + json.dumps(public_path(json.loads(f'"{m.group(2)}"')), ensure_ascii=False)

    return _LOCAL_LITERAL.sub(shorten, text)


__all__ = ["public_json", "public_path", "public_value"]
