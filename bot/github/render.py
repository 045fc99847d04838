"""Render comment and check-run text from `templates/comments/*.j2`.

Every value interpolated into a template is escaped as untrusted (`bot.github.escape.untrusted`) unless it is wrapped in
`markupsafe.Markup` by the caller: escaping is the default, trusting is explicit. Each comment template starts with
`{{ marker }}`, the hidden key `<!-- openlab:KIND:KEY -->` by which the bot finds and edits its own comment.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2
from markupsafe import Markup

import templates
from bot.github.escape import code, untrusted

TEMPLATE_DIR = templates.path("comments")


def marker(kind: str, key: str) -> str:
    return f"<!-- openlab:{kind}:{key} -->"


def _finalize(value: Any) -> Any:
    if isinstance(value, Markup) or value is None:
        return "" if value is None else value
    if isinstance(value, bool | int | float):
        return value
    return untrusted(value)


@cache
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)), autoescape=False, finalize=_finalize,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
    )
    env.filters["code"] = code  # `{{ path | code }}`: an untrusted name as a code span it cannot leave
    return env


def render(template: str, **ctx: Any) -> str:
    return _env().get_template(template).render(**ctx).strip() + "\n"


def render_comment(kind: str, key: str, **ctx: Any) -> str:
    body = render(f"{kind}.md.j2", marker=Markup(marker(kind, key)), **ctx)
    if not body.startswith(marker(kind, key)):
        raise ValueError(f"templates/comments/{kind}.md.j2 must start with {{{{ marker }}}}")
    return body


def fmt_flops(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"
