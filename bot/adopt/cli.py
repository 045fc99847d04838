"""`openlab init`, `openlab doctor` and `openlab app create`: the commands a lab adopting openlab runs."""

from __future__ import annotations

import os
from pathlib import Path

import click

from runner.errors import OpenlabError


@click.command("init")
@click.option("--force", is_flag=True, help="Overwrite files the lab edited (their difference is shown otherwise).")
@click.option("--private-key", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the signing private key (outside the repository). "
                   "Default: ~/.config/openlab/<repo>-signing-key.pem")
@click.option("--upstream", default="openlab/openlab", show_default=True,
              help="owner/name of the openlab repository whose reusable workflows the lab's workflows call.")
@click.argument("directory", default=".", type=click.Path(file_okay=False, path_type=Path))
def init(directory: Path, force: bool, private_key: Path | None, upstream: str) -> None:
    """Write a working lab into the git repository at DIRECTORY (forms, workflows, openlab.yml, examples, keys).

    Re-running it after upgrading openlab updates the files the lab did not change and keeps the others."""
    from bot.adopt.init import MANIFEST, PUBLIC_KEY, git_root, init_lab

    if "/" not in upstream.strip("/"):
        raise OpenlabError(f"--upstream {upstream!r}: expected owner/name")
    root = git_root(directory.resolve())
    report = init_lab(root, force=force, upstream=upstream.strip("/"), private_key=private_key)
    for label, paths in (("wrote", report.written), ("updated", report.updated),
                         ("overwrote (--force)", report.overwritten)):
        for p in paths:
            click.echo(f"{label:>10}  {p}")
    for p in report.deleted:
        click.echo(f"{'skipped':>10}  {p}  (you deleted it; --force writes it again)")
    for p, diff in report.kept.items():
        click.echo(f"{'kept':>10}  {p}  (you edited it; openlab's version differs:)")
        click.echo(diff.rstrip("\n"))
    click.echo(f"{len(report.unchanged)} file(s) already up to date; hashes in {MANIFEST}")
    if report.kept:
        click.echo(f"{len(report.kept)} file(s) you edited were kept: re-run with --force to take openlab's version.")
    if report.private_key:
        click.echo(f"signing key: public -> {PUBLIC_KEY} (commit it), private -> {report.private_key} (never commit it)")
        click.echo("next: store the private key as the OPENLAB_SIGNING_KEY secret, e.g.\n"
                   f"  gh secret set OPENLAB_SIGNING_KEY < {report.private_key}")
    click.echo("then: git add -A && git commit -m 'Adopt openlab'; `openlab doctor` checks the deployment.")




@click.command("doctor")
@click.option("--mode", type=click.Choice(["app", "actions"]), default=None,
              help="Deployment mode (default: actions inside GitHub Actions, app otherwise).")
@click.option("--repo", "repo_dir", default=".", type=click.Path(file_okay=False, path_type=Path),
              help="The lab's repository (for .github/openlab.yml and the public key).")
@click.option("--env-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="KEY=VALUE settings over the environment (the file `openlab app create` writes).")
def doctor(mode: str | None, repo_dir: Path, env_file: Path | None) -> None:
    """Check this deployment (secrets, App key, Ray, store, sandbox, W&B, site, ledger) and print the fixes.

    Exit status 1 when a check fails (warnings do not fail)."""
    from bot.adopt.app_create import read_env_file
    from bot.adopt.doctor import FAIL, Context, run_checks, table

    mode = mode or ("actions" if os.environ.get("GITHUB_ACTIONS") == "true" else "app")
    env = {**os.environ, **(read_env_file(env_file) if env_file else {})}
    checks = run_checks(Context(root=repo_dir.resolve(), mode=mode, env=env))
    click.echo(table(checks))
    failed = [c for c in checks if c.status == FAIL]
    click.echo(f"\n{len(checks) - len(failed)}/{len(checks)} checks pass" + (f"; fix: {', '.join(c.name for c in failed)}" if failed else ""))
    if failed:
        raise SystemExit(1)


@click.group("app")
def app_group() -> None:
    """The lab's GitHub App."""


@app_group.command("create")
@click.option("--webhook-url", required=True, help="Where `openlab serve` will receive webhooks (https://HOST/webhook).")
@click.option("--name", default="openlab", show_default=True, help="The App's name (unique on GitHub).")
@click.option("--org", default=None, help="Create it under this organisation instead of your account.")
@click.option("--homepage", default="https://github.com/openlab/openlab", show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the key and env file go. Default: ~/.config/openlab")
@click.option("--web-url", default="https://github.com", show_default=True, help="GitHub's web root (GHES).")
@click.option("--api-url", envvar="OPENLAB_GITHUB_API_URL", default="https://api.github.com", show_default=True)
@click.option("--port", type=int, default=0, help="Loopback port of the callback (default: a free one).")
@click.option("--no-browser", is_flag=True, help="Print the URL to open instead of opening a browser.")
@click.option("--timeout", "timeout_s", type=float, default=900, show_default=True, help="Seconds to wait for GitHub.")
def app_create(webhook_url: str, name: str, org: str | None, homepage: str, out_dir: Path | None, web_url: str,
               api_url: str, port: int, no_browser: bool, timeout_s: float) -> None:
    """Register the lab's GitHub App with GitHub's manifest flow and write its id, key and webhook secret."""
    from bot.adopt.app_create import Flow, run_flow

    out = out_dir or Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "openlab"
    flow = Flow(web_url, api_url, out, {}, org)
    created = run_flow(flow, name=name, webhook_url=webhook_url, homepage=homepage, port=port or None,
                       open_browser=not no_browser, timeout_s=timeout_s, echo=click.echo)
    click.echo(f"App {created.slug} (id {created.app_id}) created.")
    click.echo(f"  private key   -> {created.key_path} (0600; never commit it)")
    click.echo(f"  settings      -> {created.env_path} (OPENLAB_APP_ID, OPENLAB_PRIVATE_KEY_PATH, OPENLAB_WEBHOOK_SECRETS)")
    click.echo(f"next: install it on the lab's repository: {created.html_url}/installations/new")
    click.echo(f"      then `openlab doctor --env-file {created.env_path}`, and run `openlab serve` with that file's settings.")


def commands() -> list[click.Command]:
    return [init, doctor, app_group]
