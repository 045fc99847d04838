"""Issue forms: read the form definition, parse a rendered issue body back into fields by that definition.

GitHub renders each answered field as ``### <label>``, a blank line and the value; an empty optional field is
``_No response_``; checkboxes render as ``- [X] option``. Field ids are not rendered, so labels are mapped
back to ids through the form's own field list (never a second hard-coded copy of it).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

FORMS = ("experiment", "speedrun", "datashop")
BUNDLED_DIR = Path(__file__).resolve().parent.parent / ".github" / "ISSUE_TEMPLATE"
NO_RESPONSE = "_No response_"
_HEADING = re.compile(r"^###[ \t]+(.+?)[ \t]*$", re.MULTILINE)
_CHECKBOX = re.compile(r"^\s*[-*]\s+\[([ xX])\]\s+(.*)$")


class FormField(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    type: str
    label: str
    required: bool = False
    options: tuple[str, ...] = ()


class Form(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    labels: tuple[str, ...] = ()
    title_prefix: str = ""
    fields: tuple[FormField, ...]


def load_form(name: str, text: str) -> Form:
    data = yaml.safe_load(text) or {}
    fields = []
    for el in data.get("body", []):
        if el.get("type") == "markdown" or "id" not in el:
            continue
        attrs = el.get("attributes", {})
        options = tuple(o["label"] if isinstance(o, dict) else str(o) for o in attrs.get("options", []))
        fields.append(FormField(
            id=el["id"], type=el["type"], label=str(attrs.get("label", el["id"])).strip(),
            required=bool(el.get("validations", {}).get("required", False)), options=options,
        ))
    return Form(name=name, labels=tuple(data.get("labels", [])), title_prefix=str(data.get("title", "")).strip(),
                fields=tuple(fields))


def bundled_form(name: str) -> Form:
    return load_form(name, (BUNDLED_DIR / f"{name}.yml").read_text())


def parse_body(form: Form, body: str | None) -> tuple[dict[str, Any], list[str]]:
    """Field id -> value (str, list of ticked options, or None), plus the labels whose heading is missing."""
    sections: dict[str, str] = {}
    matches = list(_HEADING.finditer(body or ""))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body or "")
        sections.setdefault(m.group(1).strip().lower(), (body or "")[m.end():end].strip())
    values: dict[str, Any] = {}
    missing: list[str] = []
    for f in form.fields:
        raw = sections.get(f.label.lower())
        if raw is None:
            missing.append(f.label)
            values[f.id] = None
        elif f.type == "checkboxes":
            values[f.id] = [m.group(2).strip() for line in raw.splitlines()
                            if (m := _CHECKBOX.match(line)) and m.group(1) in "xX"]
        else:
            values[f.id] = None if raw in ("", NO_RESPONSE) else _unfence(raw)
    return values, missing


def _unfence(text: str) -> str:
    lines = text.splitlines()
    if len(lines) >= 2 and lines[0].startswith("```") and lines[-1].strip() == "```":
        return "\n".join(lines[1:-1]).strip()
    return text


def which_form(labels: set[str], title: str, forms: dict[str, Form]) -> Form | None:
    """The form an issue was opened from: by the form's labels first, then its title prefix."""
    for form in forms.values():
        if form.labels and set(form.labels) <= labels:
            return form
    for form in forms.values():
        prefix = form.title_prefix.rstrip(": ").strip()
        if prefix and title.strip().lower().startswith(prefix.lower()):
            return form
    return None
