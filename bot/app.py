"""`openlab serve`: the GitHub App webhook server (FastAPI).

POST / (and /webhook): size cap -> HMAC-SHA256 over the raw body under any configured secret (401, nothing
stored, on failure) -> event/delivery headers -> JSON -> atomic claim of `X-GitHub-Delivery` in the ledger, which
is also the durable enqueue -> 202. A redelivery answers 200 `duplicate`. Handled events with an action the bot
ignores, and unknown events, answer 202 `ignored` and are not stored. The worker thread does all GitHub calls.
GET /healthz, GET /metrics (Prometheus).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from bot.events import HANDLED_EVENTS, handles
from bot.service import Bot

log = logging.getLogger("openlab.bot")


def verify_signature(secrets: list[bytes], body: bytes, header: str | None) -> bool:
    if not header or not header.startswith("sha256="):
        return False
    given = header[7:].strip().lower()
    ok = False
    for secret in secrets:  # check every secret so timing does not reveal which one matched
        ok |= hmac.compare_digest(hmac.new(secret, body, hashlib.sha256).hexdigest(), given)
    return ok


def sign(secret: bytes, body: bytes) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def _answer(status: int, **body: object) -> JSONResponse:
    return JSONResponse(body, status_code=status)


def create_app(bot: Bot, *, start_worker: bool = True) -> FastAPI:
    secrets = bot.settings.require_secrets()
    max_body = bot.settings.max_body_bytes
    metrics = bot.metrics

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if start_worker:
            bot.worker.start()
        if bot.recovery is not None:  # redeliver what failed while the server was away (bot/recovery.py)
            bot.recovery.start()
        yield
        if bot.recovery is not None:
            bot.recovery.stop()
        if start_worker:
            bot.worker.stop()

    app = FastAPI(title="openlab bot", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)

    async def read_verified(request: Request) -> bytes | JSONResponse:
        """The raw body, or the answer to give: 413 over the cap, 401 without a valid signature."""
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > max_body):
            metrics.deliveries.labels("-", "too_large").inc()
            return _answer(413, error=f"body over {max_body} bytes")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > max_body:
                metrics.deliveries.labels("-", "too_large").inc()
                return _answer(413, error=f"body over {max_body} bytes")
        if not verify_signature(secrets, bytes(body), request.headers.get("x-hub-signature-256")):
            metrics.deliveries.labels("-", "bad_signature").inc()
            return _answer(401, error="missing or invalid X-Hub-Signature-256")
        return bytes(body)

    async def webhook(request: Request) -> Response:
        raw = await read_verified(request)
        if isinstance(raw, JSONResponse):
            return raw
        event = request.headers.get("x-github-event", "")
        guid = request.headers.get("x-github-delivery", "").strip()
        if not event or not guid or len(guid) > 64:
            metrics.deliveries.labels("-", "bad_headers").inc()
            return _answer(400, error="X-GitHub-Event and X-GitHub-Delivery (<= 64 chars) are required")
        if "json" not in request.headers.get("content-type", "application/json"):
            return _answer(415, error="content type must be application/json")
        try:
            payload = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            metrics.deliveries.labels(event[:40], "bad_json").inc()
            return _answer(400, error="body is not valid JSON")
        if not isinstance(payload, dict):
            metrics.deliveries.labels(event[:40], "bad_payload").inc()
            return _answer(400, error="payload is not a JSON object")
        action = payload.get("action")
        # Cheap routing check only; the worker parses the full typed model, so ingress stays in the millisecond
        # range. A payload of the wrong shape is claimed and then marked failed with the field that is wrong.
        if event not in HANDLED_EVENTS or not handles(event, action):
            metrics.deliveries.labels(event if event in HANDLED_EVENTS else "other", "ignored").inc()
            return _answer(202, ignored=f"{event[:40]}.{str(action)[:40]} is not handled")
        try:
            fresh = bot.ledger.claim(guid, event, action if isinstance(action, str) else None, raw)
        except Exception:
            log.exception("ledger claim failed for %s", guid)
            return _answer(503, error="ledger unavailable; please redeliver")
        metrics.deliveries.labels(event, "accepted" if fresh else "duplicate").inc()
        return _answer(200, duplicate=guid) if not fresh else _answer(202, queued=guid)

    app.add_api_route("/", webhook, methods=["POST"])
    app.add_api_route("/webhook", webhook, methods=["POST"])

    @app.get("/healthz")
    def healthz() -> dict[str, object]:
        return {"ok": True, "queue_depth": bot.ledger.queue_depth()}

    @app.get("/metrics")
    def prom() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.exception_handler(Exception)
    async def _never_500(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return _answer(503, error="temporary failure; please redeliver")

    return app
