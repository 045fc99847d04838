"""`openlab serve`: the GitHub App webhook server (FastAPI).

POST / (and /webhook): body read under a size cap and a read timeout (413 / 408, see `bot.ingress.guards`) -> HMAC-SHA256
over the raw body under any configured secret (401, nothing stored, on failure) -> event/delivery headers ->
content type (415) -> depth-bounded JSON object (400) -> atomic claim of `X-GitHub-Delivery` in the ledger, which
is also the durable enqueue -> 202. A redelivery answers 200 `duplicate`. Handled events with an action the bot
ignores, and unknown events, answer 202 `ignored` and are not stored. The worker thread does all GitHub calls.
GET /healthz, GET /metrics (Prometheus). Bad input is always a 4xx with a JSON `error`; a 5xx means a fault of ours
(the ledger unavailable), which GitHub may redeliver.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from bot.github.events import HANDLED_EVENTS, handles
from bot.ingress.guards import Limits, Rejected, parse_payload, read_body
from bot.ingress.infra import new_error_id
from bot.ingress.service import Bot

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
        if bot.recovery is not None:  # redeliver what failed while the server was away (bot/ingress/recovery.py)
            bot.recovery.start()
        yield
        if bot.recovery is not None:
            bot.recovery.stop()
        if start_worker:
            bot.worker.stop()

    app = FastAPI(title="openlab bot", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)

    limits = Limits(max_body_bytes=max_body, body_timeout_s=bot.settings.request_timeout_s)

    async def read_verified(request: Request) -> tuple[str, str, dict[str, Any], bytes]:
        """(event, delivery id, payload, raw body) of a request that passes every guard, else Rejected."""
        raw = await read_body(request, limits)
        if not verify_signature(secrets, raw, request.headers.get("x-hub-signature-256")):
            raise Rejected(401, "missing or invalid X-Hub-Signature-256", outcome="bad_signature")
        event = request.headers.get("x-github-event", "")
        guid = request.headers.get("x-github-delivery", "").strip()
        if not event or not guid or len(guid) > 64 or len(event) > 64:
            raise Rejected(400, "X-GitHub-Event and X-GitHub-Delivery (<= 64 chars) are required",
                           outcome="bad_headers")
        if "json" not in request.headers.get("content-type", "application/json"):
            raise Rejected(415, "content type must be application/json", outcome="bad_content_type")
        return event, guid, parse_payload(raw, limits), raw

    async def webhook(request: Request) -> Response:
        try:
            event, guid, payload, raw = await read_verified(request)
        except Rejected as no:
            metrics.deliveries.labels("-", no.outcome).inc()
            headers = {"connection": "close"} if no.close else None
            return JSONResponse({"error": no.error}, status_code=no.status, headers=headers)
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
        # Only faults of ours get here (bad input is a 4xx above): details in the log under an id, none in the answer.
        error_id = new_error_id()
        log.error("unexpected error %s on %s", error_id, request.url.path, exc_info=exc)
        return _answer(503, error="temporary failure; please redeliver", error_id=error_id)

    return app
