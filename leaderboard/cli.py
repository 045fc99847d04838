"""`openlab leaderboard build|serve`: the static speedrun site."""

from __future__ import annotations

from pathlib import Path

import click

from runner.errors import OpenlabError

DEFAULT_RESULTS = "experiments/**/results.json"
DEFAULT_KEY = ".github/openlab.pub"
DEFAULT_CONFIG = ".github/openlab.yml"


def _options(f):  # type: ignore[no-untyped-def]
    for opt in reversed(
        [
            click.option(
                "--results",
                "results",
                multiple=True,
                default=[DEFAULT_RESULTS],
                show_default=True,
                help="A glob, a folder, a results file, or a store URL (gs://...); repeatable.",
            ),
            click.option(
                "--public-key",
                type=click.Path(dir_okay=False),
                default=DEFAULT_KEY,
                show_default=True,
                help="Ed25519 public key (PEM) that verified runs are signed with.",
            ),
            click.option(
                "--tracks",
                "tracks_file",
                type=click.Path(dir_okay=False),
                default=DEFAULT_CONFIG,
                show_default=True,
                help="YAML with a 'tracks:' list (openlab.yml); missing means the default tracks.",
            ),
            click.option(
                "--repo-url",
                default=None,
                help="Repository web URL for code/PR links (default: each run's git remote).",
            ),
            click.option("--title", default="openlab speedrun", show_default=True),
            click.option("--workers", type=int, default=None, help="Worker processes (default: CPU count)."),
        ]
    ):
        f = opt(f)
    return f


def _build(
    results: tuple[str, ...],
    out: str,
    public_key: str,
    tracks_file: str,
    repo_url: str | None,
    title: str,
    workers: int | None,
    quiet: bool = False,
    reproductions: tuple[str, ...] = (),
) -> None:
    from leaderboard.site import BuildOptions, build_site
    from leaderboard.tracks import load_tracks

    key_path = Path(public_key)
    pem = None
    if key_path.is_file():
        pem = key_path.read_bytes()
    elif public_key != DEFAULT_KEY:
        raise OpenlabError(f"--public-key {public_key}: no such file")
    opts = BuildOptions(
        sources=list(results),
        out=Path(out),
        tracks=load_tracks(tracks_file),
        public_pem=pem,
        repo_url=repo_url,
        site_title=title,
        workers=workers,
        reproductions=list(reproductions),
    )
    report = build_site(opts)
    if pem is None:
        click.echo(f"warning: no public key at {public_key}; every run is shown as self-reported", err=True)
    for w in report.warnings:
        click.echo(f"warning: {w}", err=True)
    if not quiet or report.warnings:
        click.echo(
            f"built {report.out}: {report.runs} runs from {report.files} files"
            f" ({len(report.warnings)} warnings) in {report.seconds:.2f} s"
        )


@click.group()
def leaderboard() -> None:
    """Build or preview the static speedrun leaderboard."""


@leaderboard.command()
@_options
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder to write the site to.")
@click.option("--reproductions", multiple=True, default=(), help="Glob or folder of the lab's reproduction.json "
              "files (e.g. STORE/reproductions): the record pages; repeatable.")
def build(
    results: tuple[str, ...],
    out: str,
    public_key: str,
    tracks_file: str,
    repo_url: str | None,
    title: str,
    workers: int | None,
    reproductions: tuple[str, ...] = (),
) -> None:
    """Build the site from every results file in --results into --out (GitHub Pages serves it as is)."""
    _build(results, out, public_key, tracks_file, repo_url, title, workers, reproductions=reproductions)


@leaderboard.command()
@_options
@click.option("--out", default="out/site", show_default=True, type=click.Path(file_okay=False))
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8765, show_default=True, type=int)
@click.option("--interval", default=1.0, show_default=True, type=float, help="Seconds between change checks.")
def serve(
    results: tuple[str, ...],
    out: str,
    public_key: str,
    tracks_file: str,
    repo_url: str | None,
    title: str,
    workers: int | None,
    host: str,
    port: int,
    interval: float,
) -> None:
    """Build, serve on localhost, and rebuild when results, tracks, key or templates change."""
    from leaderboard.serve import serve_site

    def rebuild() -> None:
        _build(results, out, public_key, tracks_file, repo_url, title, workers, quiet=True)

    serve_site(rebuild, Path(out), list(results), [public_key, tracks_file], host, port, interval)


@leaderboard.command("import")
@click.argument("src", type=click.Path(exists=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder to write results.json files to.")
@click.option("--repo", default=None, help="Repository the files come from (owner/name), kept as provenance.")
@click.option("--commit", default=None, help="Commit of that repository, kept as provenance.")
def import_(src: str, out: str, repo: str | None, commit: str | None) -> None:
    """Import results the lab already has (Marin's speedrun_results.json, any version, or its runs.json).

    Each run becomes OUT/<run folder>/results.json marked imported; build the site with --results OUT.
    """
    from leaderboard.marin_import import REPORT_NAME, import_results

    report = import_results(src, out, repo=repo, commit=commit)
    for f in report.files:
        click.echo(
            f"{f.path}: {f.format or 'unknown format'}: {len(f.runs)} run(s) imported,"
            f" {len(f.kept)} field(s) kept, {len(f.not_read)} not read"
        )
        for line in f.not_read:
            click.echo(f"  not read: {line}")
        for line in f.errors:
            click.echo(f"error: {line}", err=True)
    click.echo(
        f"imported {report.imported} run(s) from {len(report.files)} file(s) into {out}"
        f" ({report.failed} problem(s); report in {Path(out) / REPORT_NAME})"
    )
    if report.imported == 0:
        raise OpenlabError(f"{src}: nothing imported")


def commands() -> list[click.Command]:
    from leaderboard.browse.cli import browse

    return [leaderboard, browse]
