"""GitHub's App manifest flow in the sandbox: the web step and the REST conversion.

- ``POST /settings/apps/new`` (and ``/organizations/{org}/settings/apps/new``), the form post a browser makes
  with a ``manifest`` field: GitHub would show the App for confirmation; the sandbox creates it at once and
  redirects (302) to the manifest's ``redirect_url`` with ``code`` and the caller's ``state``.
- ``POST /app-manifests/{code}/conversions`` (REST, no authentication, code single-use and valid one hour):
  201 with the App's id, slug, pem, webhook_secret, client id/secret, permissions and events.

A converted App becomes the sandbox's App (its id and public key), so the written key authenticates like the
real one. Bad manifests get GitHub's 422; unknown or used codes 404.
"""

from __future__ import annotations

import json
import secrets
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlencode

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from bot.sandbox.state import SandboxState

CODE_TTL_S = 3600


def _err(status: int, message: str) -> JSONResponse:
    return JSONResponse({"message": message, "documentation_url": "https://docs.github.com/rest"}, status_code=status)


def _manifest_problem(m: Any) -> str | None:
    if not isinstance(m, dict):
        return "manifest must be a JSON object"
    if not isinstance(m.get("url"), str) or not m["url"].startswith(("http://", "https://")):
        return "url is required"
    hook = m.get("hook_attributes")
    if hook is not None and (not isinstance(hook, dict) or not str(hook.get("url", "")).startswith("http")):
        return "hook_attributes.url is required"
    if "redirect_url" in m and not str(m["redirect_url"]).startswith("http"):
        return "redirect_url is not a URL"
    return None


def add_manifest_routes(app: FastAPI, st: SandboxState) -> None:
    pending: dict[str, tuple[float, dict[str, Any], str | None]] = {}

    async def create(request: Request, org: str | None) -> Response:
        form = parse_qs((await request.body()).decode("utf-8", "replace"))  # no python-multipart needed
        try:
            manifest = json.loads(form.get("manifest", [""])[0])
        except ValueError:
            return _err(422, "manifest is not valid JSON")
        problem = _manifest_problem(manifest)
        if problem:
            return _err(422, f"Invalid manifest: {problem}")
        code = secrets.token_hex(10)
        pending[code] = (time.time(), manifest, org)
        target = manifest.get("redirect_url") or manifest["url"]
        query = {"code": code, **({"state": request.query_params["state"]} if "state" in request.query_params else {})}
        return RedirectResponse(f"{target}{'&' if '?' in target else '?'}{urlencode(query)}", status_code=302)

    @app.post("/settings/apps/new")
    async def new_app(request: Request) -> Response:
        return await create(request, None)

    @app.post("/organizations/{org}/settings/apps/new")
    async def new_org_app(org: str, request: Request) -> Response:
        return await create(request, org)

    @app.post("/app-manifests/{code}/conversions", status_code=201)
    def conversion(code: str) -> Any:
        entry = pending.pop(code, None)
        if entry is None or time.time() - entry[0] > CODE_TTL_S:
            return _err(404, "Not Found")
        _, m, org = entry
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption()).decode()
        public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo).decode()
        with st.lock:
            app_id = next(st.ids)
            st.app_id, st.app_public_key = app_id, public
        name = str(m.get("name") or f"app-{app_id}")
        slug = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        owner = st.user(org, "Organization") if org else st.user("sandbox-owner")
        return JSONResponse({
            "id": app_id, "slug": slug, "node_id": f"A_{app_id}", "client_id": f"Iv1.{secrets.token_hex(8)}",
            "owner": owner, "name": name, "description": m.get("description"),
            "external_url": m["url"], "html_url": f"https://github.com/apps/{slug}", "created_at": now,
            "updated_at": now, "permissions": m.get("default_permissions", {}),
            "events": m.get("default_events", []), "installations_count": 0,
            "client_secret": secrets.token_hex(20), "webhook_secret": secrets.token_hex(20), "pem": pem,
        }, status_code=201)
