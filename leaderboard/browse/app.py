"""The data browser web app: read-only, confined to one store prefix.

Routes (all GET): ``/`` and ``/files?path=`` list a folder; ``/shard?path=&page=&size=&filter=`` pages through
a document shard; ``/cache?path=`` shows a token cache's statistics; ``/execution?path=`` renders an
execution record (refreshing while the run is going); ``/api/shard`` is the JSON form of ``/shard``;
``/metrics?path=`` shows a metrics.jsonl as a table and ``/raw?path=`` returns a JSON file (results.json).
Every path is resolved by :func:`leaderboard.browse.paths.confine`; a refused path is a 403 with the reason.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fsspec.core import url_to_fs
from jinja2 import Environment, FileSystemLoader, select_autoescape

from leaderboard.browse.metrics import add_routes, file_kind
from leaderboard.browse.paths import PathRefused, confine, relative
from leaderboard.browse.shards import Filter, Page, ShardReader, is_shard

PAGE_SIZES = (10, 20, 50, 100)


class BrowseError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _env() -> Environment:
    from leaderboard.pages import templates_dir

    env = Environment(loader=FileSystemLoader(str(templates_dir())), autoescape=select_autoescape(["html", "j2"]))
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, sort_keys=True, default=str)
    return env


def _listing(prefix: str, full: str) -> list[dict[str, Any]]:
    fs, path = url_to_fs(full)
    if not fs.exists(path):
        raise BrowseError(404, "no such folder in the store")
    if not fs.isdir(path):
        raise BrowseError(400, "not a folder")
    entries = []
    for info in sorted(fs.ls(path, detail=True), key=lambda i: (i["type"] != "directory", i["name"])):
        name = info["name"].rstrip("/").rsplit("/", 1)[-1]
        if name.startswith("."):
            continue
        rel = relative(prefix, full.rstrip("/") + "/" + name)
        kind = "folder" if info["type"] == "directory" else (file_kind(name) or ("shard" if is_shard(name) else "file"))
        if kind == "folder" and fs.exists(f"{path.rstrip('/')}/{name}/manifest.json"):
            kind = "cache"
        if name.endswith(".json") and path.rstrip("/").endswith("/experiments"):
            kind = "execution"
        entries.append({"name": name, "path": rel, "kind": kind, "size": info.get("size")})
    return entries


def create_app(prefix: str, *, title: str = "openlab data browser") -> FastAPI:
    """Build the app for one store prefix (a local path, memory:// or gs://)."""
    app = FastAPI(title=title, docs_url=None, redoc_url=None, openapi_url=None)
    env = _env()
    # Links from execution pages point into this browser, relative to its own prefix.
    env.filters["store_rel"] = lambda full, _launch_prefix=None: relative(prefix, full)
    reader = ShardReader()

    def render(name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        html = env.get_template(name).render(title=title, prefix=prefix, **ctx)
        return HTMLResponse(html, status_code=status)

    def crumbs(rel: str) -> list[dict[str, str]]:
        parts = [p for p in rel.split("/") if p]
        return [{"name": p, "path": "/".join(parts[: i + 1])} for i, p in enumerate(parts)]

    @app.exception_handler(BrowseError)
    async def _browse_error(request: Request, err: BrowseError) -> HTMLResponse:
        return render("browse/error.html.j2", status=err.status, message=err.message)

    @app.exception_handler(PathRefused)
    async def _refused(request: Request, err: PathRefused) -> HTMLResponse:
        return render("browse/error.html.j2", status=403, message=f"refused: {err}")

    @app.get("/", response_class=HTMLResponse)
    def index() -> RedirectResponse:
        return RedirectResponse("/files?path=", status_code=307)

    @app.get("/files", response_class=HTMLResponse)
    def files(path: str = "") -> HTMLResponse:
        full = confine(prefix, path)
        return render(
            "browse/files.html.j2",
            path=relative(prefix, full),
            crumbs=crumbs(relative(prefix, full)),
            entries=_listing(prefix, full),
        )

    def _page(path: str, page: int, size: int, filter: str) -> Page:
        full = confine(prefix, path)
        if not is_shard(full):
            raise BrowseError(400, "not a document shard (jsonl, jsonl.gz, jsonl.zst or parquet)")
        fs, p = url_to_fs(full)
        if not fs.isfile(p):
            raise BrowseError(404, "no such shard in the store")
        try:
            flt = Filter.parse(filter) if filter.strip() else None
        except ValueError as err:
            raise BrowseError(400, str(err)) from None
        return reader.page(full, page, size, flt)

    @app.get("/shard", response_class=HTMLResponse)
    def shard(
        path: str, page: int = Query(0, ge=0), size: int = Query(20, ge=1, le=500), filter: str = ""
    ) -> HTMLResponse:
        result = _page(path, page, size, filter)
        rel = relative(prefix, confine(prefix, path))
        keys = sorted({k for d in result.documents for k in d.attributes})
        return render(
            "browse/shard.html.j2",
            path=rel,
            crumbs=crumbs(rel),
            result=result,
            filter=filter,
            size=size,
            sizes=PAGE_SIZES,
            attribute_keys=keys,
        )

    @app.get("/api/shard")
    def api_shard(
        path: str, page: int = Query(0, ge=0), size: int = Query(20, ge=1, le=500), filter: str = ""
    ) -> JSONResponse:
        try:
            return JSONResponse(_page(path, page, size, filter).model_dump(mode="json"))
        except BrowseError as err:
            return JSONResponse({"error": err.message}, status_code=err.status)

    @app.get("/cache", response_class=HTMLResponse)
    def cache(path: str) -> HTMLResponse:
        from runner.data.cache import Manifest

        full = confine(prefix, path)
        fs, p = url_to_fs(full.rstrip("/") + "/manifest.json")
        if not fs.isfile(p):
            raise BrowseError(404, "no token cache here (manifest.json missing)")
        try:
            manifest = Manifest.model_validate_json(fs.cat_file(p))
        except ValueError as err:
            raise BrowseError(
                422, f"manifest.json does not match the cache schema: {str(err).splitlines()[0]}"
            ) from None
        rel = relative(prefix, full)
        stats = {
            "bytes per token": manifest.bytes / max(manifest.tokens, 1),
            "tokens per document": manifest.tokens / max(manifest.documents, 1),
        }
        return render("browse/cache.html.j2", path=rel, crumbs=crumbs(rel), manifest=manifest, stats=stats)

    @app.get("/execution", response_class=HTMLResponse)
    def execution(path: str, refresh: int = Query(5, ge=1, le=600)) -> HTMLResponse:
        from leaderboard.executions import read_execution
        from runner.executor.records import RecordError

        full = confine(prefix, path)
        if not full.endswith(".json"):
            raise BrowseError(400, "not an execution record (experiments/<run_id>.json)")
        try:
            view = read_execution(full)
        except FileNotFoundError:
            raise BrowseError(404, "no such execution record in the store") from None
        except RecordError as err:
            raise BrowseError(422, str(err).replace(prefix, "<store>")) from None
        rel = relative(prefix, full)
        return render(
            "browse/execution.html.j2",
            path=rel,
            crumbs=crumbs(rel),
            ex=view,
            refresh_s=refresh,
            browse_base="",
        )

    add_routes(app, prefix, render, crumbs, BrowseError)
    return app
