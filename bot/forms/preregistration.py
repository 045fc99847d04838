"""Validate a parsed issue form against `.github/openlab.yml`: required fields, FLOPs budget, track.

Pure functions: the issues handler turns their result into a label, one sticky comment and a ledger record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from bot.config.repo_config import RepoConfig
from bot.forms.issue_forms import Form
from runner.config import Author
from runner.schema import Results

_NUMBER = re.compile(r"^\s*([0-9][0-9_,]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*(?:flops?)?\s*$", re.IGNORECASE)
_ISSUE_REF = re.compile(r"#(\d+)")
_URL = re.compile(r"^https?://\S+$")
_BARE_DOMAIN = re.compile(r"^(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}(?:/\S*)?$")


@dataclass
class Checked:
    form: str
    values: dict[str, Any]
    problems: list[str] = field(default_factory=list)
    track: str | None = None
    planned_flops: float | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


def parse_flops(text: str | None) -> float | None:
    """'3e18', '3.5E+18 FLOPs', '1,000,000' -> float; anything else -> None."""
    if not text:
        return None
    m = _NUMBER.match(text.replace(" ", " "))
    if not m:
        return None
    try:
        return float(m.group(1).replace(",", "").replace("_", ""))
    except ValueError:
        return None


def slugify(title: str, form: Form) -> str:
    prefix = form.title_prefix
    t = title.strip()
    if prefix and t.lower().startswith(prefix.lower()):
        t = t[len(prefix):]
    slug = re.sub(r"[^a-z0-9]+", "_", t.lower()).strip("_")[:40].rstrip("_")
    return slug or form.name


def next_file(form: str, number: int, slug: str, config: RepoConfig) -> str:
    if form == "speedrun":
        return f"{config.experiments_dir}/speedrun/{slug}/{slug}.py"
    return f"{config.experiments_dir}/exp{number:03d}_{slug}.py"


def check(form: Form, values: dict[str, Any], missing: list[str], config: RepoConfig) -> Checked:
    out = Checked(form=form.name, values=values)
    for f in form.fields:
        if f.label in missing and f.required:
            out.problems.append(f"**{f.label}**: section missing (keep the `### {f.label}` heading)")
        elif f.required and not values.get(f.id):
            out.problems.append(f"**{f.label}**: required, but empty")
    raw_flops = values.get("flops")
    if raw_flops:
        flops = parse_flops(raw_flops)
        if flops is None or flops <= 0:
            out.problems.append(f"**{_label(form, 'flops')}**: not a positive number of FLOPs (write e.g. 3e18)")
        else:
            out.planned_flops = flops
            cap = config.budgets.max_flops_per_speedrun if form.name == "speedrun" else config.budgets.max_flops_per_run
            if flops > cap:
                out.problems.append(f"**{_label(form, 'flops')}**: {flops:.3g} is over this repo's budget of {cap:.3g}")
    raw_track = values.get("track")
    if raw_track:
        track = config.track(str(raw_track))
        if track is None:
            ids = ", ".join(t.id for t in config.tracks)
            out.problems.append(f"**Track**: unknown track; choose one of {ids}")
        else:
            out.track = track.id
            if track.max_flops is not None and out.planned_flops and out.planned_flops > track.max_flops:
                out.problems.append(
                    f"**Track**: {track.id} allows at most {track.max_flops:.3g} FLOPs, planned {out.planned_flops:.3g}")
    url = values.get("url")
    if url and not (_URL.match(str(url)) or _BARE_DOMAIN.match(str(url))):
        # Marin's community form asks for a bare "example.com"; anything else must be an http(s) link.
        out.problems.append(f"**{_label(form, 'url')}**: must be a web address (https://... or example.com)")
    for key in ("related",):
        if values.get(key):
            values[key] = ", ".join(f"#{n}" for n in _ISSUE_REF.findall(str(values[key]))) or values[key]
    return out


def _label(form: Form, field_id: str) -> str:
    return next((f.label for f in form.fields if f.id == field_id), field_id)


def credit(results: Results, prereg: dict[str, Any] | None, *, issue: int | None, pr: int) -> Results:
    """The run's results with author, affiliation, description and issue link from the preregistration.

    Only trusted sources count: the issue form's answers and GitHub's record of who opened it (the ledger's
    preregistration row), the PR number the bot dispatched. What the PR's own experiment file declared about its
    author is not credit (anyone can write any name there), so without a preregistration the author is cleared.
    """
    fields: dict[str, Any] = dict((prereg or {}).get("fields") or {})
    name = _text(fields.get("author")) or _text(fields.get("opened_by"))
    url = _text(fields.get("url"))
    author = Author(name=name, affiliation=_text(fields.get("affiliation")),
                    url=url if url and re.match(r"^https?://\S+$", url) else None) if name else None
    description = _text(fields.get("description")) or _text(fields.get("hypothesis")) or _text(
        (prereg or {}).get("title")) or ""
    provenance = results.provenance.model_copy(update={
        "issue": issue, "pr": pr, "issue_url": _text(fields.get("issue_url")) if prereg else None})
    return results.model_copy(update={"author": author, "description": description[:2000],
                                      "provenance": provenance})


def _text(value: object) -> str | None:
    if isinstance(value, list):
        value = ", ".join(str(v) for v in value)
    text = str(value).strip() if value is not None else ""
    return text or None
