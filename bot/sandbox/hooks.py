"""The sandbox App's webhook delivery log, as GitHub keeps it: every delivery the driver sent (failed ones too),
``GET /app/hook/deliveries`` (newest first, ``per_page``, ``cursor`` paging through the ``Link`` header,
``status=success|failure``) and ``POST /app/hook/deliveries/{id}/attempts``, which redelivers asynchronously to
the configured hook URL, signed, and logs the attempt (``redelivery: true``). Both need the App's JWT.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from datetime import UTC, datetime
from typing import Any

import httpx
import jwt
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from bot.sandbox import shapes
from bot.sandbox.state import SandboxState


def _err(status: int, message: str) -> JSONResponse:
    return JSONResponse({"message": message, "documentation_url": "https://docs.github.com/rest"}, status_code=status)


def app_jwt_error(st: SandboxState, request: Request) -> JSONResponse | None:
    """None when the request carries a valid App JWT (RS256, the App's id as ``iss``, at most 10 minutes)."""
    auth = request.headers.get("authorization", "")
    try:
        claims = jwt.decode(auth.removeprefix("Bearer "), st.app_public_key or "", algorithms=["RS256"])
    except jwt.PyJWTError as err:
        return _err(401, f"A JSON web token could not be decoded ({err})")
    if str(claims.get("iss")) != str(st.app_id) or claims["exp"] - claims["iat"] > 600:
        return _err(401, "'Expiration time' claim ('exp') is too far in the future")
    return None


def record(st: SandboxState, guid: str, event: str, action: str | None, body: str, status_code: int,
           installation_id: int | None, redelivery: bool = False, duration: float = 0.0) -> dict[str, Any]:
    """Log one delivery attempt (the caller holds no lock)."""
    ok = 200 <= status_code < 300
    with st.lock:
        entry = {
            "id": next(st.hook_ids), "guid": guid,
            "delivered_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "redelivery": redelivery,
            "duration": round(duration, 3), "status": "OK" if ok else (
                f"Invalid HTTP Response: {status_code}" if status_code else "failed to connect to host"),
            "status_code": status_code, "event": event, "action": action, "installation_id": installation_id,
            "repository_id": None, "throttled_at": None, "_body": body,
        }
        st.hook_deliveries.append(entry)
    return entry


def _deliver(st: SandboxState, entry: dict[str, Any]) -> None:
    body = entry["_body"].encode()
    sig = "sha256=" + hmac.new((st.hook_secret or "").encode(), body, hashlib.sha256).hexdigest()
    headers = {"X-GitHub-Event": entry["event"], "X-GitHub-Delivery": entry["guid"], "X-Hub-Signature-256": sig,
               "Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/sandbox"}
    t0, status = time.monotonic(), 0
    try:
        status = httpx.post(st.hook_url or "http://127.0.0.1:9", content=body, headers=headers, timeout=10).status_code
    except httpx.HTTPError:
        status = 0
    record(st, entry["guid"], entry["event"], entry["action"], entry["_body"], status, entry["installation_id"],
           redelivery=True, duration=time.monotonic() - t0)


def add_hook_routes(app: FastAPI, st: SandboxState) -> None:
    @app.get("/app/hook/deliveries")
    def deliveries(request: Request, per_page: int = 30, cursor: str | None = None, status: str | None = None) -> Any:
        if (bad := app_jwt_error(st, request)) is not None:
            return bad
        if status not in (None, "success", "failure") or (cursor and not cursor.startswith("v1_")):
            return _err(422, "Validation Failed")
        per_page = max(1, min(per_page, 100))
        start = int(cursor[3:]) if cursor and cursor[3:].isdigit() else None
        with st.lock:
            items = [e for e in reversed(st.hook_deliveries) if (start is None or e["id"] <= start)
                     and (status is None or (status == "success") == (200 <= e["status_code"] < 300))]
        page, rest = items[:per_page], items[per_page:]
        headers = {}
        if rest:
            nxt = f"{shapes.API}/app/hook/deliveries?per_page={per_page}&cursor=v1_{rest[0]['id']}"
            headers["Link"] = f'<{nxt}>; rel="next"'
        return JSONResponse([{k: v for k, v in e.items() if not k.startswith("_")} for e in page], headers=headers)

    @app.post("/app/hook/deliveries/{delivery_id}/attempts", status_code=202)
    def redeliver(delivery_id: int, request: Request) -> Any:
        if (bad := app_jwt_error(st, request)) is not None:
            return bad
        with st.lock:
            entry = next((e for e in st.hook_deliveries if e["id"] == delivery_id), None)
        if entry is None:
            return _err(404, "Not Found")
        threading.Thread(target=_deliver, args=(st, entry), daemon=True).start()
        return JSONResponse({}, status_code=202)

    @app.post("/_sandbox/hook/deliveries")
    async def log_delivery(request: Request) -> Any:
        b = await request.json()
        e = record(st, b["guid"], b["event"], b.get("action"), b["body"], int(b["status_code"]),
                   b.get("installation_id"))
        return {"id": e["id"]}

    @app.get("/_sandbox/hook/deliveries")
    def list_log() -> Any:
        with st.lock:
            return [{k: v for k, v in e.items() if not k.startswith("_")} for e in st.hook_deliveries]
