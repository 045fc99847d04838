"""`openlab app create`: register the lab's GitHub App through GitHub's manifest flow.

1. A loopback page (``http://127.0.0.1:PORT/``) posts the manifest (openlab's permissions and events, the
   webhook URL, ``redirect_url`` = the loopback callback) to ``{web}/settings/apps/new?state=S`` (or an
   organisation's), submitting itself in the browser.
2. The user confirms on GitHub, which redirects to ``/callback?code=C&state=S``; a wrong ``state`` is refused.
3. ``POST {api}/app-manifests/C/conversions`` returns the App's id, private key and webhook secret. They are
   written where ``openlab doctor`` and ``openlab serve`` read them: the key as a 0600 PEM file and the settings as
   a 0600 env file (``OPENLAB_APP_ID``, ``OPENLAB_PRIVATE_KEY_PATH``, ``OPENLAB_WEBHOOK_SECRETS``), never printed.
"""

from __future__ import annotations

import html
import json
import os
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from runner.errors import OpenlabError

# What the bot needs and no more; `installation` events are always sent to Apps. app.yml mirrors this (tested).
PERMISSIONS = {"metadata": "read", "issues": "write", "pull_requests": "write", "checks": "write",
               "contents": "write"}
EVENTS = ["issues", "issue_comment", "pull_request", "check_run", "check_suite"]


def build_manifest(name: str, webhook_url: str, redirect_url: str, homepage: str, public: bool = False) -> dict[str, Any]:
    return {
        "name": name, "url": homepage, "description": "openlab: preregistered experiments, PR plans, gated runs "
        "and a speedrun leaderboard.", "hook_attributes": {"url": webhook_url, "active": True},
        "redirect_url": redirect_url, "public": public, "default_permissions": dict(PERMISSIONS),
        "default_events": list(EVENTS),
    }


@dataclass
class Created:
    app_id: int
    slug: str
    html_url: str
    key_path: Path
    env_path: Path


@dataclass
class Flow:
    """One manifest round trip: the page, the callback, the exchange; `done` is set when it ends either way."""

    web_url: str
    api_url: str
    out_dir: Path
    manifest: dict[str, Any]
    org: str | None = None
    state: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    done: threading.Event = field(default_factory=threading.Event)
    result: Created | None = None
    error: str | None = None

    def form_action(self) -> str:
        base = self.web_url.rstrip("/")
        where = f"/organizations/{self.org}/settings/apps/new" if self.org else "/settings/apps/new"
        return f"{base}{where}?state={self.state}"

    def page(self) -> str:
        action = html.escape(self.form_action(), quote=True)
        value = html.escape(json.dumps(self.manifest), quote=True)
        return (f"<!doctype html><meta charset=utf-8><link rel=icon href='data:,'><title>openlab: create the GitHub App</title>"
                f"<form method=post action=\"{action}\"><input type=hidden name=manifest value=\"{value}\">"
                "<p>Sending openlab's App manifest to GitHub…</p><button type=submit>Create the App on GitHub</button>"
                "</form><script>document.forms[0].submit()</script>")

    def callback(self, code: str | None, state: str | None) -> tuple[int, str]:
        if state != self.state:
            return 400, "state does not match this `openlab app create`: start it again"
        if not code:
            return 400, "GitHub sent no code"
        try:
            self.result = self.exchange(code)
        except OpenlabError as err:
            self.error = str(err)
            return 502, self.error
        finally:
            self.done.set()
        return 200, f"App {self.result.slug} (id {self.result.app_id}) created; back to the terminal."

    def exchange(self, code: str) -> Created:
        url = f"{self.api_url.rstrip('/')}/app-manifests/{code}/conversions"
        try:
            resp = requests.post(url, headers={"Accept": "application/vnd.github+json"}, timeout=30)
        except requests.RequestException as err:
            raise OpenlabError(f"POST {url}: {err}") from None
        if resp.status_code != 201:
            raise OpenlabError(f"GitHub refused the manifest code ({resp.status_code}): {resp.text[:200]}")
        data = resp.json()
        try:
            app_id, slug, pem = int(data["id"]), str(data["slug"]), str(data["pem"])
            secret = str(data.get("webhook_secret") or "")
        except (KeyError, TypeError, ValueError):
            raise OpenlabError("GitHub's conversion answer lacks id, slug or pem") from None
        self.out_dir.mkdir(parents=True, exist_ok=True)
        key_path = self.out_dir / f"{slug}.private-key.pem"
        env_path = self.out_dir / f"{slug}.env"
        _write_secret(key_path, pem)
        env = {"OPENLAB_APP_ID": str(app_id), "OPENLAB_PRIVATE_KEY_PATH": str(key_path.resolve()),
               "OPENLAB_WEBHOOK_SECRETS": secret}
        if self.api_url.rstrip("/") != "https://api.github.com":
            env["OPENLAB_GITHUB_API_URL"] = self.api_url
        _write_secret(env_path, "".join(f"{k}={v}\n" for k, v in env.items()))
        return Created(app_id, slug, str(data.get("html_url", "")), key_path, env_path)


def _write_secret(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def loopback_app(flow: Flow) -> FastAPI:
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/", response_class=HTMLResponse)
    def page() -> str:
        return flow.page()

    @app.get("/callback")
    def callback(code: str | None = None, state: str | None = None) -> HTMLResponse:
        status, text = flow.callback(code, state)
        return HTMLResponse(f"<!doctype html><meta charset=utf-8><link rel=icon href='data:,'><title>openlab</title><p>{html.escape(text)}</p>",
                            status_code=status)

    return app


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines (blank lines and # comments skipped), as `app create` writes them."""
    out = {}
    try:
        text = path.read_text()
    except OSError as err:
        raise OpenlabError(f"{path}: {err.strerror} (`openlab app create` writes this file)") from None
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, eq, value = line.partition("=")
        if not eq or not key.strip().isidentifier():
            raise OpenlabError(f"{path} line {n}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def run_flow(flow: Flow, *, name: str, webhook_url: str, homepage: str, port: int | None, open_browser: bool,
             timeout_s: float, echo: Any = print) -> Created:
    """Serve the loopback page and callback until GitHub calls back (or `timeout_s` passes)."""
    from bot.ingress.serving import ServedApp

    served = ServedApp(loopback_app(flow), port=port)
    flow.manifest = build_manifest(name, webhook_url, f"{served.url}/callback", homepage)
    served.start()
    try:
        echo(f"open {served.url}/ in a browser signed in to GitHub (it sends the manifest; confirm there)")
        if open_browser:
            import webbrowser

            webbrowser.open(f"{served.url}/")
        if not flow.done.wait(timeout_s):
            raise OpenlabError(f"no answer from GitHub in {timeout_s:.0f} s: run `openlab app create` again")
    finally:
        served.stop()
    if flow.result is None:
        raise OpenlabError(flow.error or "the App was not created")
    return flow.result
