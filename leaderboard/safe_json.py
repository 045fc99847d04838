"""JSON that is safe inside HTML: inlined in a <script> element or served beside the pages, no '<', '>' or '&'
of user text can close an element or open a comment."""

from __future__ import annotations

import json
from typing import Any


def script_json(obj: Any) -> str:
    """JSON safe to inline in a <script> element: no '<', '>' or '&' can close it or open a comment."""
    return markup_safe(json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False))


def markup_safe(json_text: str) -> str:
    """The same JSON value with '<', '>' and '&' as \\u escapes: no user text reads as markup anywhere."""
    return json_text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
