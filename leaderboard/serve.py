"""`openlab leaderboard serve`: build, serve the folder on localhost, rebuild when inputs change.

Change detection polls modification times (results files, metrics, the tracks file, the key and the
templates) every ``interval`` seconds: no watcher dependency, and it works on any filesystem. The build
swaps the whole folder into place, so the server never serves a half-built site.
"""

from __future__ import annotations

import glob
import os
import threading
import time
from collections.abc import Callable
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import click

from leaderboard.pages import templates_dir
from runner.errors import OpenlabError


def snapshot(sources: list[str], extra: list[str]) -> dict[str, float]:
    """Modification times of every local input; remote sources (gs://) are not watched."""
    paths: list[str] = []
    for src in sources:
        if "://" in src and not src.startswith("file://"):
            continue
        src = src.removeprefix("file://")
        if any(c in src for c in "*?["):
            base = src.split("*", 1)[0].rsplit("/", 1)[0] or "."
            paths.extend(glob.glob(os.path.join(base, "**", "*.json*"), recursive=True))
        elif os.path.isdir(src):
            paths.extend(glob.glob(os.path.join(src, "**", "*.json*"), recursive=True))
        else:
            paths.append(src)
    paths.extend(extra)
    paths.extend(str(p) for p in templates_dir().iterdir())
    out = {}
    for p in paths:
        try:
            out[p] = os.stat(p).st_mtime_ns
        except OSError:
            continue
    return out


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def serve_site(
    rebuild: Callable[[], None],
    out: Path,
    sources: list[str],
    extra: list[str],
    host: str,
    port: int,
    interval: float,
) -> None:
    rebuild()
    try:
        server = ThreadingHTTPServer((host, port), partial(_Quiet, directory=str(out.resolve())))
    except OSError as err:
        raise OpenlabError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    click.echo(f"serving {out} at http://{host}:{server.server_port}/ (Ctrl-C to stop)")
    seen = snapshot(sources, extra)
    try:
        while True:
            time.sleep(interval)
            now = snapshot(sources, extra)
            if now != seen:
                seen = now
                try:
                    rebuild()
                    click.echo(f"rebuilt at {time.strftime('%H:%M:%S')}")
                except OpenlabError as err:
                    click.echo(f"error: {err} (still serving the last good build)", err=True)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
