"""The configuration reference: every environment variable and every `.github/openlab.yml` key, in one table.

Generated from the pydantic models themselves (:class:`bot.config.settings.BotSettings`, :class:`BotRunEnvironment`
below, :class:`runner.settings.RunnerEnvironment`, :class:`bot.config.repo_config.RepoConfig` and the models it
nests), written into README.md between markers by ``openlab config-reference --write``; a test fails when the
README's copy differs, or when the code reads a variable no model declares.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from pydantic import AliasChoices, BaseModel, Field
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, SettingsConfigDict

START, END = "<!-- config-reference:start -->", "<!-- config-reference:end -->"


def env(name: str, default: object = None, description: str = "") -> Any:
    return Field(default, validation_alias=AliasChoices(name), description=description)


class BotRunEnvironment(BaseSettings):
    """What the dispatcher, the reconciler and Actions mode read besides BotSettings."""

    model_config = SettingsConfigDict(extra="ignore")

    github_token: str | None = env("GITHUB_TOKEN", None, "Actions mode (`openlab event`, `openlab reports build`): the workflow's token.")
    github_repository: str | None = env("GITHUB_REPOSITORY", None, "Actions mode: owner/name (set by GitHub).")
    github_run_id: str | None = env("GITHUB_RUN_ID", None, "Actions mode: makes the delivery id of `openlab event` (set by GitHub).")
    github_run_attempt: str | None = env("GITHUB_RUN_ATTEMPT", None, "Actions mode: with GITHUB_RUN_ID (set by GitHub).")
    github_api_url: str | None = env("GITHUB_API_URL", None, "Actions mode: the REST API root (set by GitHub; GHES too).")
    github_server_url: str | None = env("GITHUB_SERVER_URL", None, "Web root for links in reports (set by GitHub).")
    github_event_path: str | None = env("GITHUB_EVENT_PATH", None, "Actions mode: the event file; `openlab event plan_report` takes the PR and SHA from its workflow_run (set by GitHub).")
    signing_key: str | None = env("OPENLAB_SIGNING_KEY", None, "The lab's Ed25519 private key (PEM) that attests results; a secret.")
    signing_key_file: str | None = env("OPENLAB_SIGNING_KEY_FILE", None, "Path of that key instead of the PEM itself.")
    source: str | None = env("OPENLAB_SOURCE", None, "Where the dispatcher fetches approved SHAs (a clone URL or local repo); default the PR's base repo.")
    mirror_dir: str | None = env("OPENLAB_MIRROR_DIR", None, "Local git mirrors of lab repos; default ~/.cache/openlab/mirrors.")
    ray_dashboard_url: str | None = env("OPENLAB_RAY_DASHBOARD_URL", None, "Public URL of the Ray dashboard, for check-run and comment links.")
    leaderboard_results: str = env("OPENLAB_LEADERBOARD_RESULTS", "experiments/**/results.json", "Results the Pareto comments compare against (glob or store URL).")


def _type(field: FieldInfo) -> str:
    ann = field.annotation
    text = getattr(ann, "__name__", None) or str(ann)
    return text.replace("typing.", "").replace("NoneType", "None")


def _default(field: FieldInfo) -> str:
    factory = field.default_factory
    value = factory() if factory is not None else field.default  # type: ignore[call-arg]
    if isinstance(value, BaseModel):
        return "see below"
    if isinstance(value, list) and value and isinstance(value[0], BaseModel):
        return f"{len(value)} defaults"
    text = json.dumps(value, default=str)
    return "—" if value is None else text


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def env_rows() -> list[tuple[str, str, str, str]]:
    from bot.config.settings import BotSettings
    from runner.settings import RunnerEnvironment

    rows = []
    for model, who in ((RunnerEnvironment, "runner"), (BotSettings, "bot"), (BotRunEnvironment, "bot")):
        prefix = model.model_config.get("env_prefix", "")
        for name, field in model.model_fields.items():
            alias = field.validation_alias
            var = alias.choices[0] if isinstance(alias, AliasChoices) else f"{prefix}{name}".upper()
            rows.append((str(var), who, _default(field), field.description or ""))
    return sorted(rows)


def yaml_rows(model: type[BaseModel] | None = None, prefix: str = "") -> list[tuple[str, str, str, str]]:
    from bot.config.repo_config import RepoConfig

    model = model or RepoConfig
    rows = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        rows.append((key, _type(field), _default(field), field.description or ""))
        sub = field.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            rows += yaml_rows(sub, f"{key}.")
    return rows


def render() -> str:
    lines = [START, "", "| environment variable | read by | default | meaning |", "|---|---|---|---|"]
    lines += [f"| `{v}` | {w} | `{_cell(d)}` | {_cell(m)} |" for v, w, d, m in env_rows()]
    lines += ["", "| `.github/openlab.yml` key | type | default | meaning |", "|---|---|---|---|"]
    lines += [f"| `{k}` | `{_cell(t)}` | `{_cell(d)}` | {_cell(m)} |" for k, t, d, m in yaml_rows()]
    lines += ["", "Tracks (`tracks:`) are `leaderboard.tracks.Track` objects; see the Leaderboard section.", "", END]
    return "\n".join(lines)


def splice(readme: str, table: str) -> str:
    if START not in readme or END not in readme:
        raise ValueError("README.md has no config-reference markers")
    head, rest = readme.split(START, 1)
    _, tail = rest.split(END, 1)
    return head + table + tail


@click.command("config-reference")
@click.option("--write", is_flag=True, help="Rewrite the table in README.md instead of printing it.")
@click.option("--readme", default="README.md", show_default=True, type=click.Path(dir_okay=False))
def config_reference(write: bool, readme: str) -> None:
    """Print (or write into README.md) every environment variable and openlab.yml key."""
    table = render()
    if not write:
        click.echo(table)
        return
    path = Path(readme)
    path.write_text(splice(path.read_text(), table))
    click.echo(f"wrote the configuration reference into {path}")
