"""`.github/openlab.yml` as `openlab init` writes it: every setting at its default, with its description as a
comment, generated from :class:`bot.config.repo_config.RepoConfig` so the file cannot drift from the model."""

from __future__ import annotations

import textwrap
from typing import Any

import yaml
from pydantic import BaseModel

from bot.config.repo_config import CONFIG_PATH, RepoConfig

HEADER = f"""\
# {CONFIG_PATH}: this lab's openlab settings. Every key below is at its documented default; change what you
# need and delete the rest (a missing key means its default). Checked by the bot on every event; a typo is
# reported on the thread and the defaults are used. Reference: the README's "Configuration reference".
"""


def _comment(text: str, indent: str) -> list[str]:
    return [f"{indent}# {line}" for line in textwrap.wrap(text, 100)] if text else []


def _scalar(key: str, value: Any, indent: str) -> list[str]:
    dumped = yaml.safe_dump({key: value}, default_flow_style=False, sort_keys=False, width=1000, allow_unicode=True).rstrip("\n")
    return [indent + line for line in dumped.splitlines()]


def _value(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_defaults=True)
    if isinstance(value, list):
        return [_value(v) for v in value]
    return value


def model_lines(model: BaseModel, indent: str = "") -> list[str]:
    """One commented block per field of `model`, nested models as indented blocks."""
    lines: list[str] = []
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        lines.extend(_comment(field.description or "", indent))
        if isinstance(value, BaseModel):
            lines.append(f"{indent}{name}:")
            lines.extend(model_lines(value, indent + "  "))
        else:
            lines.extend(_scalar(name, _value(value), indent))
    return lines


def default_repo_yaml() -> str:
    return HEADER + "\n" + "\n".join(model_lines(RepoConfig())) + "\n"
