"""The bot and the sandbox against GitHub's published descriptions (npm @octokit/openapi, webhooks-examples):
every request the bot makes is an operation of the REST description with a valid body; the sandbox's answers
to the bot's reads match the response schemas; the driver's webhooks match GitHub's webhook schemas; the bot
accepts every example payload of the events it handles."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from bot.github.events import HANDLED_EVENTS
from bot.ingress.app import create_app, sign
from bot.ingress.service import Bot
from tests.bot import github_spec as gs
from tests.bot.conftest import Lab, make_settings
from tests.bot.helpers import REPO, SECRET, experiment_body, experiment_file, speedrun_body


@pytest.fixture(autouse=True)
def _specs() -> None:
    gs.require_specs()


def _full_scenario(lab: Lab) -> int:
    d = lab.driver
    n = d.open_issue(REPO, "alice", "[Experiment]: Wider MLP", experiment_body(), labels=["experiment"])
    d.open_issue(REPO, "ada", "[Speedrun]: Tiny", speedrun_body(), labels=["speedrun"])
    lab.settle()
    d.edit_issue(REPO, n, "alice", experiment_body(flops="2e16"))
    pr = d.open_pull(REPO, "alice", "exp", {f"experiments/exp{n:03d}_wider_mlp.py": experiment_file(n)}, "Wider",
                     f"Preregistration: #{n}", fork_owner="alice")
    lab.settle(timeout=60)
    d.comment(REPO, pr, "alice", "/run")
    d.add_label(REPO, pr, "maintainer", "approved-to-run")
    lab.settle()
    d.push(REPO, pr, "alice", {f"experiments/exp{n:03d}_wider_mlp.py": experiment_file(n) + "#\n"})
    lab.settle(timeout=60)
    d.comment(REPO, pr, "maintainer", "/run\n/status\n/rerun\n/cancel\n/help")
    lab.settle()
    return pr


def test_every_bot_request_is_a_documented_operation_with_a_valid_body(lab: Lab) -> None:
    _full_scenario(lab)
    seen: set[str] = set()
    problems = []
    for r in lab.driver.requests():
        found = gs.operation(r["method"], r["path"])
        if found is None:
            problems.append(f"{r['method']} {r['path']}: not an operation of GitHub's REST API")
            continue
        template, op = found
        seen.add(f"{r['method']} {template}")
        problems += [f"{r['method']} {template}: {e}" for e in gs.request_body_errors(op, r["body"])]
    assert not problems, "\n".join(problems)
    for must in ("POST /repos/{owner}/{repo}/check-runs", "GET /repos/{owner}/{repo}/collaborators/{username}/permission",
                 "POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
                 "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}", "POST /repos/{owner}/{repo}/pulls",
                 "PUT /repos/{owner}/{repo}/contents/{path}", "POST /repos/{owner}/{repo}/git/refs",
                 "DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
                 "POST /app/installations/{installation_id}/access_tokens"):
        assert must in seen, must


def test_sandbox_answers_to_the_bots_reads_match_githubs_response_schemas(lab: Lab) -> None:
    _full_scenario(lab)
    lab.driver.configure(tokens={"ghs_conformance": "openlab[bot]"})
    problems, checked = [], set()
    for r in lab.driver.requests():
        if r["method"] != "GET" or r["status"] != 200:
            continue
        template, op = gs.operation("GET", r["path"]) or ("", {})
        if template in checked:
            continue
        checked.add(template)
        resp = httpx.get(lab.driver.sandbox.base_url.join(r["path"]), params=r["query"],
                         headers={"Authorization": "Bearer ghs_conformance"})
        schema = gs.response_schema(op, 200)
        assert schema is not None, template
        problems += [f"GET {template}: {'/'.join(map(str, e.absolute_path))}: {e.message[:160]}"
                     for e in list(gs.validator(schema).iter_errors(resp.json()))[:5]]
    assert len(checked) >= 6
    assert not problems, "\n".join(problems)


def test_driver_webhooks_match_githubs_webhook_schemas(lab: Lab) -> None:
    _full_scenario(lab)
    problems, kinds = [], set()
    for event, body in lab.driver.sent.values():
        payload = json.loads(body)
        schema = gs.webhook_schema(event, payload.get("action"))
        assert schema is not None, (event, payload.get("action"))
        kinds.add(f"{event}.{payload.get('action')}")
        problems += [f"{event}.{payload.get('action')}: {'/'.join(map(str, e.absolute_path))}: {e.message[:160]}"
                     for e in list(gs.validator(schema).iter_errors(payload))[:5]]
    assert {"issues.opened", "issues.edited", "pull_request.opened", "pull_request.synchronize",
            "pull_request.labeled", "issue_comment.created"} <= kinds
    assert not problems, "\n".join(problems)


def test_bot_accepts_every_example_payload_of_the_events_it_handles(
    tmp_path: Path, app_key: tuple[Path, str]
) -> None:
    bot = Bot(make_settings(tmp_path, "http://127.0.0.1:9", app_key))
    client = TestClient(create_app(bot, start_worker=False))
    count = 0
    for event in HANDLED_EVENTS:
        for payload in gs.examples().get(event, []):
            body = json.dumps(payload).encode()
            r = client.post("/", content=body, headers={
                "X-GitHub-Event": event, "X-GitHub-Delivery": str(uuid.uuid4()), "Content-Type": "application/json",
                "X-Hub-Signature-256": sign(SECRET.encode(), body)})
            assert r.status_code == 202, (event, payload.get("action"), r.text)
            count += 1
    assert count >= 60
    assert bot.ledger.count_deliveries() > 0
