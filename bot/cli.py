"""`openlab` subcommands defined by the bot package: serve, event, sandbox."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import click

from runner.errors import ConfigError, OpenlabError


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--token-env", default=None, help="Use a fixed token from this env variable instead of App auth.")
def serve(host: str, port: int, token_env: str | None) -> None:
    """Run the GitHub App webhook server (settings from OPENLAB_* variables; see README "Bot")."""
    import uvicorn

    from bot.config.settings import load_settings
    from bot.ingress.app import create_app
    from bot.ingress.service import Bot
    from bot.ingress.serving import server_config

    settings = load_settings()
    settings.require_secrets()
    token = None
    if token_env:
        token = os.environ.get(token_env)
        if not token:
            raise ConfigError(f"--token-env {token_env}: variable is empty")
    from bot.runs.dispatch import attach_to_bot
    from bot.runs.reconcile import start_reconcile_thread

    bot = Bot(settings, token=token)
    start_reconcile_thread(attach_to_bot(bot))  # follows Ray jobs, reports results (issue 5)
    app = create_app(bot, start_worker=settings.worker == "thread")
    worker = None
    if settings.worker == "process":
        from bot.ingress import worker_process

        worker = worker_process.start(settings, token)
    try:
        uvicorn.Server(server_config(app, host, port, settings.request_timeout_s)).run()  # bot.ingress.serving: bounds
    finally:
        if worker is not None:
            worker.terminate()
            worker.join(10)


@click.command()
@click.argument("name")
@click.argument("payload", type=click.Path(exists=True))
def event(name: str, payload: str) -> None:
    """Handle one GitHub event in Actions mode (token from GITHUB_TOKEN).

    NAME is the event name ($GITHUB_EVENT_NAME) and PAYLOAD its JSON file ($GITHUB_EVENT_PATH); NAME
    `plan_report` takes the plan artifact folder of the unprivileged `openlab plan` workflow instead (untrusted data;
    the PR and SHA come from the workflow_run event in $GITHUB_EVENT_PATH).
    """
    from bot.config.settings import actions_defaults, load_settings
    from bot.ingress.service import Bot

    token = os.environ.get("GITHUB_TOKEN")
    if not token:
        raise ConfigError("GITHUB_TOKEN is not set (Actions mode)")
    overrides: dict[str, object] = {"write_interval_s": float(os.environ.get("OPENLAB_WRITE_INTERVAL_S", "1.0")),
                                     **actions_defaults()}
    settings = load_settings(**overrides)
    bot = Bot(settings, token=token, planner_factory=lambda gh: None)
    from bot.runs.dispatch import attach_to_bot

    attach_to_bot(bot)  # DispatchRun/CancelRun go to Ray (issue 5)
    if name == "plan_report":
        from bot.ingress.actions_mode import plan_report

        plan_report(bot, Path(payload), os.environ.get("GITHUB_REPOSITORY", ""), os.environ.get("GITHUB_EVENT_PATH"))
        return
    raw = Path(payload).read_bytes()
    from runner.safeparse import loads_json

    data = loads_json(raw, payload)  # ConfigError naming the file: malformed or nested too deep
    action = data.get("action") if isinstance(data, dict) else None
    run = os.environ.get("GITHUB_RUN_ID")
    guid = f"actions-{run}-{os.environ.get('GITHUB_RUN_ATTEMPT', '1')}" if run else hashlib.sha256(raw).hexdigest()[:40]
    if not bot.ledger.claim(guid, name, action, raw):
        status = bot.ledger.delivery_status(guid) or {}
        if status.get("status") != "queued":
            click.echo(f"delivery {guid} already handled ({status.get('status')})")
            return
    bot.worker.drain()
    row = bot.ledger.delivery_status(guid) or {}
    click.echo(json.dumps({"delivery": guid, "status": row.get("status"), "error": row.get("error")}))
    if row.get("status") == "failed":
        raise OpenlabError(f"event {name}: {row.get('error')}")


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8900, show_default=True, type=int)
def sandbox(host: str, port: int) -> None:
    """Run the local GitHub sandbox (for the demo and tests; loopback only)."""
    import uvicorn

    from bot.ingress.serving import server_config
    from bot.sandbox.server import create_sandbox_app

    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ConfigError("the sandbox only listens on loopback")
    uvicorn.Server(server_config(create_sandbox_app(), host, port)).run()


def commands() -> list[click.Command]:
    from bot.adopt.cli import commands as adopt_commands
    from bot.config.reference import config_reference
    from bot.demo.cli import demo
    from bot.keys_cli import keygen
    from bot.reports.cli import reports
    from bot.runs.reconcile_cli import reconcile_cmd

    return [serve, event, sandbox, reconcile_cmd, keygen, reports, demo, config_reference, *adopt_commands()]
