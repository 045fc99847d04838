"""Spread parsing and run-page rendering over forked worker processes.

Validation through the schema and page rendering cost ~0.2 ms per run each, so 10,000 runs need both
cores. Each worker owns a contiguous slice of the sorted file list and keeps its parsed
:class:`~leaderboard.load.LoadedRun` objects in memory between the two phases; only compact
:class:`~leaderboard.rows.Row` summaries go to the parent, which decides duplicates and ranks, then asks
each worker to render its own accepted runs. Small builds (or ``workers=1``) run inline, same code.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from leaderboard.load import LoadedRun, load_one
from leaderboard.pages import RunPages
from leaderboard.rows import Row, make_row

INLINE_BELOW = 400
Item = tuple[int, str, str, bool]


class _Slice:
    """The work of one worker (or of the parent, inline)."""

    def __init__(self, items: list[Item], public_pem: bytes | None, repo_url: str | None, in_repo: bool):
        self.items = items
        self.public_pem = public_pem
        self.repo_url = repo_url
        self.in_repo = in_repo
        self.runs: dict[int, tuple[LoadedRun, Row]] = {}

    def parse(self) -> tuple[list[Row], list[str]]:
        rows, warnings = [], []
        for index, url, folder, has_metrics in self.items:
            run, notes = load_one(url, folder, has_metrics, self.public_pem)
            warnings.extend(notes)
            if run is not None:
                row = make_row(index, run, self.repo_url, self.in_repo)
                self.runs[index] = (run, row)
                rows.append(row)
        return rows, warnings

    def render(self, out: Path, ranks: dict[int, list[dict[str, Any]]], common: dict[str, Any]) -> list[str]:
        warnings: list[str] = []
        pages = out / "runs"
        pages.mkdir(parents=True, exist_ok=True)
        renderer = RunPages(common)
        for index, rank in ranks.items():
            if index not in self.runs:
                continue
            run, row = self.runs[index]
            html, notes = renderer.render(run, row, rank)
            warnings.extend(notes)
            write_new(pages / f"{row.slug}.html", html.encode("utf-8"))
        return warnings


def write_new(path: Path, data: bytes) -> None:
    """Write a file in a fresh build folder: three system calls, no buffered text layer (10,000 of them)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _serve(conn: Connection, work: _Slice, out: Path) -> None:
    # The parent's objects are shared copy-on-write; collecting them would touch every page for nothing.
    gc.freeze()
    try:
        conn.send(work.parse())
        ranks, common = conn.recv()
        conn.send(work.render(out, ranks, common))
    except BaseException as err:  # report, never hang the parent
        conn.send(err)
    finally:
        conn.close()


class Pool:
    def __init__(
        self,
        found: list[tuple[str, str, bool]],
        public_pem: bytes | None,
        repo_url: str | None,
        in_repo: bool,
        out: Path,
        workers: int | None = None,
    ):
        items = [(i, url, folder, m) for i, (url, folder, m) in enumerate(found)]
        n = workers or min(len(os.sched_getaffinity(0)), 8)
        if len(items) < INLINE_BELOW:
            n = 1
        self.out = out
        size = -(-len(items) // n) if items else 0
        self.slices = [
            _Slice(items[k : k + size], public_pem, repo_url, in_repo)
            for k in range(0, len(items), size or 1)
        ]
        self.procs: list[tuple[Any, Connection]] = []
        self.inline = n == 1

    def __enter__(self) -> Pool:
        if not self.inline:
            ctx = mp.get_context("fork")
            for s in self.slices:
                parent, child = ctx.Pipe()
                p = ctx.Process(target=_serve, args=(child, s, self.out), daemon=True)
                p.start()
                child.close()
                self.procs.append((p, parent))
        return self

    def __exit__(self, *exc: object) -> None:
        for p, conn in self.procs:
            conn.close()
            p.join(timeout=5)
            if p.is_alive():
                p.kill()

    def _recv(self, conn: Connection) -> Any:
        msg = conn.recv()
        if isinstance(msg, BaseException):
            raise msg
        return msg

    def parse(self) -> tuple[list[Row], list[str]]:
        rows: list[Row] = []
        warnings: list[str] = []
        results = [s.parse() for s in self.slices] if self.inline else [self._recv(c) for _, c in self.procs]
        for r, w in results:
            rows.extend(r)
            warnings.extend(w)
        return rows, warnings

    def render(self, ranks: dict[int, list[dict[str, Any]]], common: dict[str, Any]) -> list[str]:
        warnings: list[str] = []
        if self.inline:
            for s in self.slices:
                warnings.extend(s.render(self.out, ranks, common))
            return warnings
        for _, conn in self.procs:
            conn.send((ranks, common))
        for _, conn in self.procs:
            warnings.extend(self._recv(conn))
        return warnings
