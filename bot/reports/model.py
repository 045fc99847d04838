"""Reports index: what one row says about one experiment issue, and the hand-curated overlay.

Generated from GitHub (issues, pull requests, the bot's own comments) and then curated by hand through
``experiments/reports.yml``, as Marin's *Selected Experiment Reports* page is: the overlay can group and
order issues, replace a conclusion, and hide an issue. Overlay keys are validated; an unknown key is an
error naming it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runner.config import format_validation_error
from runner.errors import ConfigError

Status = Literal["needs-info", "preregistered", "running", "done"]


class Link(BaseModel):
    title: str
    url: str


class ExecutionLink(Link):
    """One launch of the experiment: its execution page, with the run id and the status it ended in as fields."""

    run_id: str
    status: str


class Headline(BaseModel):
    """The experiment's best run on the leaderboard: what the reports index shows in its result column."""

    run_id: str
    bpb: float
    model_flops: float | None = None
    url: str


class ExperimentReport(BaseModel):
    number: int
    title: str
    url: str
    kind: Literal["experiment", "speedrun"]
    status: Status
    topics: list[str]
    author: str
    created_at: str
    pulls: list[Link] = []
    wandb: list[Link] = []
    executions: list[ExecutionLink] = []
    result: Headline | None = None
    conclusion: str | None = None
    conclusion_source: Literal["curated", "issue", "bot", "none"] = "none"


class Group(BaseModel):
    title: str
    description: str = ""
    reports: list[ExperimentReport]


class OverlayGroup(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1)
    description: str = ""
    issues: list[int] = Field(default_factory=list, description="Issue numbers, in the order shown.")


class Overlay(BaseModel):
    """``experiments/reports.yml``: groups (in order), curated conclusions, hidden issues."""

    model_config = ConfigDict(extra="forbid")

    groups: list[OverlayGroup] = []
    conclusions: dict[int, str] = {}
    hide: list[int] = []
    topic_prefix: str = Field(default="topic:", description="Labels starting with this name a topic group.")


def load_overlay(path: str | Path | None) -> Overlay:
    if path is None or not Path(path).exists():
        return Overlay()
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        raise ConfigError(f"{p}: malformed YAML{f' at line {mark.line + 1}' if mark else ''}") from None
    if data is None:
        return Overlay()
    try:
        return Overlay.model_validate(data)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, str(p))) from None
