"""`openlab app create` against the sandbox GitHub: the loopback page posts the manifest, the sandbox redirects
back with a code, the code becomes the App's id, key and secret (answer checked against GitHub's description),
written 0600 where `openlab doctor` reads them, and the key then authenticates as the App."""

from __future__ import annotations

import html
import re
import threading
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from bot.adopt.app_create import EVENTS, PERMISSIONS, Created, Flow, read_env_file, run_flow
from bot.adopt.doctor import OK, Context, check_app_key, check_webhook_secrets
from bot.github.auth import AppAuth
from bot.ingress.serving import ServedApp
from bot.sandbox.server import create_sandbox_app
from bot.sandbox.state import SandboxState
from runner.errors import OpenlabError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def sandbox() -> Any:
    state = SandboxState()
    with ServedApp(create_sandbox_app(state)) as srv:
        yield srv.url, state


def _start(flow: Flow, port_box: list[str]) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def echo(line: str) -> None:
        port_box.append(re.search(r"http://127\.0\.0\.1:\d+", line).group(0))  # type: ignore[union-attr]

    def go() -> None:
        try:
            out["created"] = run_flow(flow, name="Our Lab Bot", webhook_url="https://lab.example.org/webhook",
                                      homepage="https://lab.example.org", port=None, open_browser=False,
                                      timeout_s=60, echo=echo)
        except OpenlabError as err:
            out["error"] = str(err)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    for _ in range(400):
        if port_box:
            break
        threading.Event().wait(0.05)
    return t, out


def _browser_posts(loopback: str) -> requests.Response:
    """What the page's script does: post the hidden manifest field to the form's action, follow redirects."""
    page = requests.get(loopback + "/", timeout=10).text
    action = html.unescape(re.search(r'action="([^"]+)"', page).group(1))  # type: ignore[union-attr]
    manifest = html.unescape(re.search(r'name=manifest value="([^"]+)"', page).group(1))  # type: ignore[union-attr]
    return requests.post(action, data={"manifest": manifest}, timeout=30)


def test_manifest_flow_writes_what_doctor_and_the_bot_need(sandbox: Any, tmp_path: Path) -> None:
    url, state = sandbox
    flow = Flow(web_url=url, api_url=url, out_dir=tmp_path / "cfg", manifest={}, org="our-lab")
    port: list[str] = []
    t, out = _start(flow, port)
    resp = _browser_posts(port[0])
    t.join(30)
    assert resp.status_code == 200 and "created" in resp.text, resp.text
    created: Created = out["created"]
    assert created.slug == "our-lab-bot"
    for p in (created.key_path, created.env_path):
        assert p.stat().st_mode & 0o777 == 0o600
    env = read_env_file(created.env_path)
    assert env["OPENLAB_APP_ID"] == str(created.app_id) and env["OPENLAB_GITHUB_API_URL"] == url
    ctx = Context(root=tmp_path, mode="app", env=env)
    assert check_app_key(ctx).status == OK and check_webhook_secrets(ctx).status == OK
    # the key GitHub (the sandbox) issued authenticates as the new App
    auth = AppAuth.from_files(env["OPENLAB_APP_ID"], Path(env["OPENLAB_PRIVATE_KEY_PATH"]), url)
    assert auth.installation_token(1).startswith("ghs_")
    posted = [r for r in state.requests if r["path"].endswith("/settings/apps/new")]
    assert posted and posted[0]["path"] == "/organizations/our-lab/settings/apps/new"
    assert posted[0]["query"]["state"] == flow.state


def test_wrong_state_and_reused_code_are_refused(sandbox: Any, tmp_path: Path) -> None:
    url, _ = sandbox
    flow = Flow(web_url=url, api_url=url, out_dir=tmp_path, manifest={})
    port: list[str] = []
    t, out = _start(flow, port)
    forged = requests.get(f"{port[0]}/callback", params={"code": "x", "state": "not-ours"}, timeout=10)
    assert forged.status_code == 400 and not flow.done.is_set()
    resp = _browser_posts(port[0])
    t.join(30)
    assert resp.status_code == 200 and "created" in out
    code = re.search(r"code=([0-9a-f]+)", resp.url).group(1)  # type: ignore[union-attr]
    again = requests.post(f"{url}/app-manifests/{code}/conversions", timeout=10)
    assert again.status_code == 404  # single use, as on GitHub
    bad = requests.post(f"{url}/settings/apps/new", data={"manifest": "{not json"}, timeout=10)
    assert bad.status_code == 422


def test_sandbox_conversion_matches_githubs_description(sandbox: Any) -> None:
    from tests.bot import github_spec as gs

    gs.require_specs()
    url, _ = sandbox
    manifest = Flow("x", "x", Path("."), {}).manifest or {
        "name": "x", "url": "https://x.example", "hook_attributes": {"url": "https://x.example/webhook"},
        "redirect_url": "http://127.0.0.1:9/callback", "default_permissions": PERMISSIONS, "default_events": EVENTS}
    import json

    redirect = requests.post(f"{url}/settings/apps/new", data={"manifest": json.dumps(manifest)},
                             allow_redirects=False, timeout=10)
    assert redirect.status_code == 302
    code = re.search(r"code=([0-9a-f]+)", redirect.headers["location"]).group(1)  # type: ignore[union-attr]
    path = f"/app-manifests/{code}/conversions"
    template, op = gs.operation("POST", path)  # type: ignore[misc]
    assert template == "/app-manifests/{code}/conversions"
    resp = requests.post(url + path, timeout=10)
    assert resp.status_code == 201 and "201" in op["responses"]
    errors = [e.message for e in gs.validator(gs.response_schema(op, 201)).iter_errors(resp.json())]  # type: ignore[arg-type]
    assert errors == []


def test_app_yml_asks_for_the_permissions_app_create_asks_for() -> None:
    doc = yaml.safe_load((ROOT / "app.yml").read_text())
    assert doc["default_permissions"] == PERMISSIONS
    assert doc["default_events"] == EVENTS


@pytest.mark.browser
def test_chromium_submits_the_page_by_itself(sandbox: Any, tmp_path: Path) -> None:
    from tests.browser import browser_page

    url, _ = sandbox
    flow = Flow(web_url=url, api_url=url, out_dir=tmp_path, manifest={})
    port: list[str] = []
    t, out = _start(flow, port)
    with browser_page() as (page, errors):
        page.goto(port[0] + "/")
        page.wait_for_url(re.compile(r".*/callback\?code=.*"), timeout=30_000)
        assert "created" in page.content()
    t.join(30)
    assert "created" in out and not errors
