"""`openlab browse`: serve the data browser for one store prefix on localhost."""

from __future__ import annotations

import click


@click.command()
@click.option(
    "--prefix",
    envvar="OPENLAB_STORAGE_PREFIX",
    default="out",
    show_default=True,
    help="Store prefix to browse (local path, memory:// or gs://); nothing outside it is served.",
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8766, show_default=True, type=int)
def browse(prefix: str, host: str, port: int) -> None:
    """Browse documents, token caches and executions under the store prefix (read-only)."""
    import uvicorn

    from leaderboard.browse.app import create_app
    from runner.errors import OpenlabError
    from runner.store import exists

    if not exists(prefix):
        raise OpenlabError(f"--prefix {prefix}: no such store path")
    click.echo(f"browsing {prefix} at http://{host}:{port}/")
    uvicorn.run(create_app(prefix), host=host, port=port, log_level="warning")
