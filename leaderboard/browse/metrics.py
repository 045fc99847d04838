"""Data browser views of a run's own files: ``metrics.jsonl`` as a table, ``results.json`` as raw JSON.

A metrics log is one JSON object per step, not a document shard: showing it through the shard view gave
empty "documents". Both routes are confined to the store prefix like every other browser route.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Query
from fastapi.responses import HTMLResponse, Response
from fsspec.core import url_to_fs

from leaderboard.browse.paths import confine, relative
from runner.tracking import read_metric_lines

MAX_JSON_BYTES = 5_000_000
METRICS_NAME, RESULTS_NAME = "metrics.jsonl", "results.json"


def file_kind(name: str) -> str | None:
    """The view a run file gets in a listing, or None for the generic kinds."""
    return {METRICS_NAME: "metrics", RESULTS_NAME: "results"}.get(name)


def read_metrics(text: str, limit: int) -> tuple[list[str], list[dict[str, Any]], int]:
    """(columns, rows, skipped lines): columns step first, then every key in first-seen order."""
    cols: dict[str, None] = {"step": None}
    objs, skipped = read_metric_lines(text)
    rows = objs[:limit]
    for obj in rows:
        cols.update(dict.fromkeys(obj))
    return list(cols), rows, skipped


def add_routes(
    app: FastAPI, prefix: str, render: Callable[..., HTMLResponse], crumbs: Callable, error: type
) -> None:
    """``/metrics?path=`` (table, up to ``limit`` rows) and ``/raw?path=`` (a JSON file as application/json)."""

    def _read(path: str, suffix: str, what: str) -> tuple[str, bytes]:
        full = confine(prefix, path)
        if not full.endswith(suffix):
            raise error(400, f"not {what}")
        fs, p = url_to_fs(full)
        if not fs.isfile(p):
            raise error(404, f"no such {what} in the store")
        if (fs.size(p) or 0) > MAX_JSON_BYTES:
            raise error(413, f"{what} is larger than {MAX_JSON_BYTES} bytes")
        with fs.open(p, "rb") as f:
            return full, f.read()

    @app.get("/metrics", response_class=HTMLResponse)
    def metrics(path: str, limit: int = Query(1000, ge=1, le=100_000)) -> HTMLResponse:
        full, data = _read(path, ".jsonl", "a metrics log (metrics.jsonl)")
        cols, rows, skipped = read_metrics(data.decode("utf-8", errors="replace"), limit)
        rel = relative(prefix, full)
        return render(
            "browse/metrics.html.j2",
            path=rel,
            crumbs=crumbs(rel),
            cols=cols,
            rows=rows,
            skipped=skipped,
            limit=limit,
        )

    @app.get("/raw")
    def raw(path: str) -> Response:
        _, data = _read(path, ".json", "a JSON file")
        try:
            json.loads(data)
        except ValueError:
            raise error(422, "the file is not valid JSON") from None
        return Response(data, media_type="application/json")
