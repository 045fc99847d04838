"""`openlab reports build`: the reports index and the execution pages, into the site folder."""

from __future__ import annotations

import os

import click


@click.group()
def reports() -> None:
    """The lab's public record: experiment reports index and execution pages."""


@reports.command("build")
@click.option("--repo", required=True, help="owner/name of the lab's repository.")
@click.option(
    "--out", required=True, type=click.Path(file_okay=False), help="Site folder (the leaderboard's --out)."
)
@click.option(
    "--overlay", default="experiments/reports.yml", show_default=True, help="Hand-curated overlay file."
)
@click.option("--prefix", default=None, help="Store prefix whose executions get pages (local path or gs://).")
@click.option(
    "--browse-url", default=None, help="Base URL of an `openlab browse` server to link step outputs to."
)
@click.option("--api-url", envvar="GITHUB_API_URL", default="https://api.github.com", show_default=True)
@click.option("--html-url", envvar="GITHUB_SERVER_URL", default="https://github.com", show_default=True)
@click.option("--bot-login", envvar="OPENLAB_BOT_LOGIN", default="openlab[bot]", show_default=True)
def build(
    repo: str,
    out: str,
    overlay: str,
    prefix: str | None,
    browse_url: str | None,
    api_url: str,
    html_url: str,
    bot_login: str,
) -> None:
    """Fetch experiment issues from GitHub (GITHUB_TOKEN) and write OUT/reports/ and OUT/executions/."""
    from bot.github.client import GitHubClient, GitHubError
    from bot.reports.build import build_reports
    from bot.reports.collect import collect
    from bot.reports.model import load_overlay
    from bot.reports.render import write_reports
    from leaderboard.execution_pages import write_execution_pages
    from runner.errors import OpenlabError

    token = os.environ.get("GITHUB_TOKEN", "")
    gh = GitHubClient(api_url, lambda: token, write_interval_s=0)
    try:
        snap = collect(gh, repo, html_url)
    except GitHubError as err:
        raise OpenlabError(f"cannot read {repo} from GitHub, nothing was changed: {err}") from None
    views = []
    if prefix:
        views, warnings = write_execution_pages(prefix, out, browse_base=browse_url)
        for w in warnings:
            click.echo(f"warning: {w}", err=True)
    groups = build_reports(
        snap, load_overlay(overlay), bot_login, executions=[(v.run_id, v.experiment, v.status) for v in views]
    )
    page = write_reports(groups, out, repo, snap.html_url)
    n = sum(len(g.reports) for g in groups)
    click.echo(f"wrote {page} ({n} experiments in {len(groups)} groups, {len(views)} execution pages)")
