"""Issue forms: read the repository's templates, parse an issue body back into fields by that definition.

Every template in ``.github/ISSUE_TEMPLATE/`` is read (:func:`load_templates`), not a fixed list: YAML issue
forms (``*.yml``; ``config.yml`` is GitHub's chooser settings, not a form) and Markdown templates (``*.md``, as
Marin's ``experiment.md``: front matter with ``labels``/``title``, one field per ``##`` heading).

GitHub renders each answered form field as ``### <label>``, a blank line and the value; an empty optional field
is ``_No response_``; checkboxes render as ``- [X] option``. Field ids are not rendered, so headings are mapped
back to fields through the form's own field list (never a second hard-coded copy of it). People also write
issues by hand, so a heading matches at any level (``#`` to ``######``), case and punctuation aside, by the
field's label or id, and a compound heading matches every field it names: Marin's ``## Hypothesis or Goal``
(also ``Hypothesis / Goal``, ``Hypothesis and goal``) fills both ``hypothesis`` and ``goal``. A heading that
names no field ends the section above it when it is at the same or a higher level, and is kept inside it when
deeper (``### WandB Links`` under ``## Hypothesis or Goal``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

import templates
from runner.safeparse import ParseError, loads_yaml

FORMS = ("experiment", "speedrun", "datashop")
# Our forms as `openlab init` writes them (inside the wheel; .github/ISSUE_TEMPLATE of this repo holds the same
# files, checked by tests/adopt/test_init.py): the bot answers with them where a lab has no form of that name.
BUNDLED_DIR = Path("init", "github", "ISSUE_TEMPLATE")
TEMPLATE_DIR = ".github/ISSUE_TEMPLATE"
NO_RESPONSE = "_No response_"
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
_CHECKBOX = re.compile(r"^\s*[-*]\s+\[([ xX])\]\s+(.*)$")
_COMPOUND = re.compile(r"\s+(?:or|and)\s+|\s*[/&]\s*|\s*,\s*")
_FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*\n?", re.DOTALL)


class FormField(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    type: str
    label: str
    required: bool = False
    options: tuple[str, ...] = ()
    placeholder: str = ""


class Form(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    labels: tuple[str, ...] = ()
    title_prefix: str = ""
    fields: tuple[FormField, ...]


def load_form(name: str, text: str) -> Form:
    data = loads_yaml(text, f".github/ISSUE_TEMPLATE/{name}.yml") or {}
    if not isinstance(data, dict):
        raise ValueError(f"{name}: an issue form is a YAML mapping")
    fields = []
    for el in data.get("body", []) or []:
        if not isinstance(el, dict) or el.get("type") == "markdown" or "id" not in el:
            continue
        attrs = el.get("attributes", {}) or {}
        options = tuple(o["label"] if isinstance(o, dict) else str(o) for o in attrs.get("options", []) or [])
        fields.append(FormField(
            id=str(el["id"]), type=str(el["type"]), label=str(attrs.get("label", el["id"])).strip(),
            required=bool((el.get("validations") or {}).get("required", False)), options=options,
        ))
    return Form(name=name, labels=_labels(data.get("labels")), title_prefix=str(data.get("title") or "").strip(),
                fields=tuple(fields))


def load_markdown_template(name: str, text: str) -> Form:
    """A Markdown issue template: its ``##`` headings are the fields (none required), its front matter the
    labels and title; the template's own text under a heading is its placeholder (an untouched one is empty)."""
    m = _FRONT_MATTER.match(text)
    meta = (loads_yaml(m.group(1), f"{TEMPLATE_DIR}/{name}.md") if m else None) or {}
    if not isinstance(meta, dict):
        raise ValueError(f"{name}: front matter is not a YAML mapping")
    body = text[m.end():] if m else text
    heads = [h for h in _HEADING.finditer(body) if len(h.group(1)) == 2]
    fields = []
    for i, h in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(body)
        label = h.group(2).strip()
        fields.append(FormField(id=_norm(label).replace(" ", "_") or f"section_{i}", type="textarea", label=label,
                                placeholder=body[h.end():end].strip()))
    return Form(name=name, labels=_labels(meta.get("labels")), title_prefix=str(meta.get("title") or "").strip(),
                fields=tuple(fields))


def _labels(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, str):
        return tuple(x.strip() for x in raw.split(",") if x.strip())
    return tuple(str(x) for x in raw or [])


def load_templates(files: dict[str, str]) -> tuple[dict[str, Form], list[str]]:
    """Forms from ``{file name: text}`` of the template folder, and one problem line per unreadable file."""
    forms: dict[str, Form] = {}
    problems: list[str] = []
    # YAML forms first, so a form keeps its plain name when a Markdown template shares it (experiment.yml
    # is "experiment", experiment.md then "experiment.md").
    for filename in sorted(files, key=lambda f: (f.endswith(".md"), f)):
        stem, _, ext = filename.rpartition(".")
        if ext not in ("yml", "yaml", "md") or stem == "config":
            continue
        try:
            form = load_form(stem, files[filename]) if ext != "md" else load_markdown_template(stem, files[filename])
        except (ParseError, ValueError, TypeError, KeyError) as err:
            problems.append(f"{TEMPLATE_DIR}/{filename}: not a readable issue template ({type(err).__name__})")
            continue
        if form.fields:
            name = stem if stem not in forms else filename
            forms[name] = form.model_copy(update={"name": name})
    return forms, problems


def bundled_form(name: str) -> Form:
    return load_form(name, templates.path(*BUNDLED_DIR.parts, f"{name}.yml").read_text())


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def _fields_for(heading: str, form: Form) -> list[FormField]:
    """The fields a heading stands for: by label or id, else every part of a compound heading."""
    h = _norm(heading)
    exact = [f for f in form.fields if h and h in (_norm(f.label), _norm(f.id))]
    if exact:
        return exact
    parts = [_norm(p) for p in _COMPOUND.split(heading.lower()) if _norm(p)]
    if len(parts) < 2:
        return []
    found: list[FormField] = []
    for part in parts:
        hit = [f for f in form.fields if part in (_norm(f.label), _norm(f.id)) or _norm(f.label).startswith(part + " ")]
        if not hit:
            return []
        found.extend(f for f in hit if f not in found)
    return found


def _sections(form: Form, body: str) -> dict[str, str]:
    """Field id -> raw section text (the first section that names a field wins)."""
    out: dict[str, str] = {}
    open_fields: list[FormField] = []
    level = 0
    start = 0

    def close(end: int) -> None:
        for f in open_fields:
            out.setdefault(f.id, body[start:end].strip())

    for m in _HEADING.finditer(body):
        fields = _fields_for(m.group(2), form)
        depth = len(m.group(1))
        if fields or (open_fields and depth <= level):
            close(m.start())
            open_fields, level, start = fields, depth, m.end()
    close(len(body))
    return out


def parse_body(form: Form, body: str | None) -> tuple[dict[str, Any], list[str]]:
    """Field id -> value (str, list of ticked options, or None), plus the labels whose heading is missing."""
    sections = _sections(form, body or "")
    values: dict[str, Any] = {}
    missing: list[str] = []
    for f in form.fields:
        raw = sections.get(f.id)
        if raw is None:
            missing.append(f.label)
            values[f.id] = None
        elif f.type == "checkboxes":
            values[f.id] = [m.group(2).strip() for line in raw.splitlines()
                            if (m := _CHECKBOX.match(line)) and m.group(1) in "xX"]
        else:
            empty = raw in ("", NO_RESPONSE) or (f.placeholder and raw.split() == f.placeholder.split())
            values[f.id] = None if empty else _unfence(raw)
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
