"""Spread parsing and run-page rendering over forked worker processes.

Validation through the schema and page rendering cost ~0.1 ms per run each, so 10,000 runs need both
cores. Each worker owns a contiguous slice of the sorted file list and keeps its parsed
:class:`~leaderboard.load.LoadedRun` objects in memory between the two phases; only compact
:class:`~leaderboard.rows.Row` summaries go to the parent, which decides duplicates and ranks, then asks
each worker to render its own accepted runs. Rendering is started and finished separately so the parent
computes frontiers, fits, the table and the index while the workers render; each worker answers with its
share of ``runs.json`` (the schema's serialization of its accepted runs, in file order), which the
parent writes as is. Small builds (or ``workers=1``) run inline, same code.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from leaderboard.load import LoadedRun, load_one
from leaderboard.pages import RunPages, config_text
from leaderboard.public import public_json
from leaderboard.rows import Row, make_row
from leaderboard.safe_json import markup_safe

INLINE_BELOW = 400
Item = tuple[int, str, str, bool]
Ranks = dict[int, list[dict[str, Any]]]


class _Slice:
    """The work of one worker (or of the parent, inline)."""

    def __init__(self, items: list[Item], public_pem: bytes | None, repo_url: str | None, in_repo: bool):
        self.items = items
        self.public_pem = public_pem
        self.repo_url = repo_url
        self.in_repo = in_repo
        self.runs: dict[int, tuple[LoadedRun, Row]] = {}
        self.serialized: dict[int, tuple[str, str]] = {}

    def owns(self, index: int) -> bool:
        return bool(self.items) and self.items[0][0] <= index <= self.items[-1][0]

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

    def prepare(self) -> None:
        """Serialize each run for runs.json and its page's config block: rank-independent work that a
        worker does while the parent ranks (its cores would otherwise idle)."""
        for index, (run, _) in self.runs.items():
            r = run.results
            self.serialized[index] = (public_json(r.model_dump_json()), config_text(r))

    def render(self, out: Path, ranks: Ranks, common: dict[str, Any]) -> tuple[list[str], bytes]:
        """Write the pages of the accepted runs in ``ranks``; (warnings, their runs.json items)."""
        warnings: list[str] = []
        pages = out / "runs"
        pages.mkdir(parents=True, exist_ok=True)
        renderer = RunPages(common)
        items = []
        for index, rank in ranks.items():
            if index not in self.runs:
                continue
            run, row = self.runs[index]
            results_json, config_json = self.serialized[index]
            html, notes, curves = renderer.render(run, row, rank, config_json)
            warnings.extend(notes)
            write_new(pages / f"{row.slug}.html", html.encode("utf-8"))
            if curves is not None:
                write_new(pages / f"{row.slug}.curves.js", curves.encode("utf-8"))
            items.append((index, results_json))
        items.sort()
        return warnings, markup_safe(",\n".join(text for _, text in items)).encode("utf-8")


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
        work.prepare()
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
        self._pending: tuple[Ranks, dict[str, Any]] | None = None

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
        if self.inline:
            results = [s.parse() for s in self.slices]
            for s in self.slices:
                s.prepare()
        else:
            results = [self._recv(c) for _, c in self.procs]
        for r, w in results:
            rows.extend(r)
            warnings.extend(w)
        return rows, warnings

    def start_render(self, ranks: Ranks, common: dict[str, Any]) -> None:
        """Have the workers render (each gets only its own runs); inline, the work waits for finish."""
        if self.inline:
            self._pending = (ranks, common)
            return
        for s, (_, conn) in zip(self.slices, self.procs, strict=True):
            conn.send(({i: rk for i, rk in ranks.items() if s.owns(i)}, common))

    def finish_render(self) -> tuple[list[str], list[bytes]]:
        """(warnings, each slice's runs.json items in file order) once every page is written."""
        if self.inline:
            assert self._pending is not None
            results = [s.render(self.out, *self._pending) for s in self.slices]
        else:
            results = [self._recv(conn) for _, conn in self.procs]
        warnings = [w for ws, _ in results for w in ws]
        return warnings, [part for _, part in results]
