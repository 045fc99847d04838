"""Webhook ingress over HTTP: signatures (rotation, forgery), size cap, bad JSON, unknown events, duplicates,
redelivery storms, GitHub rate limits and 5xx while applying, /healthz and /metrics."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid

import httpx

from bot.ingress.app import sign, verify_signature
from tests.bot.conftest import Lab
from tests.bot.helpers import OLD_SECRET, REPO, SECRET, bot_comments, experiment_body


def test_github_signature_test_vector() -> None:
    sig = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert sign(b"It's a Secret to Everybody", b"Hello, World!") == sig
    assert verify_signature([b"other-secret", b"It's a Secret to Everybody"], b"Hello, World!", sig)
    assert not verify_signature([b"It's a Secret to Everybody"], b"Hello, World!!", sig)
    assert not verify_signature([b"It's a Secret to Everybody"], b"Hello, World!", sig.replace("sha256=", "sha1="))


def _issue_payload(lab: Lab) -> dict:
    env = lab.driver._ctl("issues", repo=REPO, user="alice", title="[Experiment]: a", body=experiment_body(),
                          labels=["experiment"])
    return {"action": "opened", "issue": env["issue"], "repository": env["repository"], "sender": env["sender"],
            "installation": {"id": 1}}


def test_forged_missing_and_rotated_signatures(lab: Lab) -> None:
    d = lab.driver
    payload = _issue_payload(lab)
    body = json.dumps(payload).encode()
    assert d.post_raw("issues", body, "g-forged", sign(b"wrong-secret!", body)).status_code == 401
    assert d.post_raw("issues", body, "g-missing", None).status_code == 401
    assert d.post_raw("issues", body + b" ", "g-tampered", sign(SECRET.encode(), body)).status_code == 401
    assert lab.bot.ledger.count_deliveries() == 0  # no side effect, not even a claimed GUID
    # a forged delivery must not poison the GUID: the genuine one with the same id still goes through
    assert d.post_raw("issues", body, "g-forged", sign(OLD_SECRET.encode(), body)).status_code == 202
    lab.settle()
    assert lab.bot.ledger.delivery_status("g-forged")["status"] == "done"


def test_bad_bodies_get_bounded_answers(lab: Lab) -> None:
    d = lab.driver
    big = b"{" + b" " * (6 * 1024 * 1024) + b"}"
    r = d.post_raw("issues", big, str(uuid.uuid4()), sign(SECRET.encode(), big))
    assert r.status_code == 413
    bad = b"{not json"
    assert d.post_raw("issues", bad, str(uuid.uuid4()), sign(SECRET.encode(), bad)).status_code == 400
    assert d.post_raw("issues", b"[1, 2]", str(uuid.uuid4()), sign(SECRET.encode(), b"[1, 2]")).status_code == 400
    unknown = b'{"zen": "x"}'
    assert d.post_raw("gollum", unknown, str(uuid.uuid4()), sign(SECRET.encode(), unknown)).status_code == 202
    assigned = json.dumps({**_issue_payload(lab), "action": "assigned"}).encode()
    r = d.post_raw("issues", assigned, str(uuid.uuid4()), sign(SECRET.encode(), assigned))
    assert r.status_code == 202 and "not handled" in r.json()["ignored"]
    r = httpx.post(lab.bot_url + "/webhook", content=unknown, headers={
        "X-Hub-Signature-256": sign(SECRET.encode(), unknown), "X-GitHub-Delivery": "x"})
    assert r.status_code == 400  # no event header
    assert lab.bot.ledger.count_deliveries() == 0
    # a signed payload of the wrong shape is claimed, then marked failed naming the field (never retried forever)
    odd = json.dumps({"action": "opened", "issue": "nope"}).encode()
    assert d.post_raw("issues", odd, "g-odd", sign(SECRET.encode(), odd)).status_code == 202
    lab.settle()
    row = lab.bot.ledger.delivery_status("g-odd")
    assert row["status"] == "failed" and row["error"] == "issues: sender: Field required"


def test_duplicate_deliveries_and_storm_yield_one_set_of_effects(lab: Lab) -> None:
    d = lab.driver
    n = d.open_issue(REPO, "alice", "[Experiment]: storm", experiment_body(), labels=["experiment"])
    guid = next(iter(d.sent))
    answers = [d.redeliver(guid).status_code for _ in range(5)]
    assert answers == [200] * 5
    lab.settle()
    t = d.thread(REPO, n)
    assert len(bot_comments(t)) == 1 and t["labels"].count("preregistered") == 1
    posts = [r for r in d.requests() if r["method"] == "POST" and r["path"].endswith(f"/issues/{n}/comments")]
    assert len(posts) == 1
    m = httpx.get(lab.bot_url + "/metrics").text
    assert 'openlab_deliveries_total{event="issues",outcome="duplicate"} 5.0' in m
    assert "openlab_queue_depth 0.0" in m
    assert httpx.get(lab.bot_url + "/healthz").json() == {"ok": True, "queue_depth": 0}


def test_rate_limits_and_5xx_are_retried_and_counted(lab: Lab) -> None:
    d = lab.driver
    d.fault("POST", "/comments", 403, {"retry-after": "1"}, times=1)
    d.fault("POST", "/labels", 502, times=2)
    d.fault("GET", "/contents/", 429, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "0"}, times=1)
    n = d.open_issue(REPO, "alice", "[Experiment]: limited", experiment_body(), labels=["experiment"])
    lab.settle(timeout=60)
    t = d.thread(REPO, n)
    assert len(bot_comments(t)) == 1 and "preregistered" in t["labels"]
    m = httpx.get(lab.bot_url + "/metrics").text
    assert 'openlab_github_rate_limited_total{status="403"} 1.0' in m
    assert 'openlab_github_rate_limited_total{status="429"} 1.0' in m


def test_persistent_5xx_keeps_delivery_then_completes(lab: Lab) -> None:
    d = lab.driver
    for gh in lab.bot._clients.values():
        gh[0].gh.max_retries = 0
    lab.bot.env_for(1)[0].gh.max_retries = 0
    d.fault("POST", "/comments", 500, times=3)
    n = d.open_issue(REPO, "alice", "[Experiment]: flaky", experiment_body(), labels=["experiment"])
    lab.settle(timeout=60)
    guid = next(iter(d.sent))
    row = lab.bot.ledger.delivery_status(guid)
    assert row["status"] == "done" and row["attempts"] == 3
    assert len(bot_comments(d.thread(REPO, n))) == 1


def test_hmac_uses_raw_bytes_not_reserialised_json(lab: Lab) -> None:
    payload = _issue_payload(lab)
    body = json.dumps(payload, indent=3, ensure_ascii=False).encode()  # odd whitespace: still valid
    sig = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert lab.driver.post_raw("issues", body, str(uuid.uuid4()), sig).status_code == 202
