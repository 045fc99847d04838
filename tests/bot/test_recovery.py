"""Recovery after downtime, against the sandbox GitHub's delivery log: events that happen while the server is
down are redelivered once it starts (and by the periodic pass), processed exactly once; claimed, non-retryable
and over-bound deliveries are left alone; the endpoints are GitHub's, with the App JWT."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from bot.ingress.app import create_app
from bot.ingress.recovery import HookDelivery, select_redeliveries
from bot.ingress.service import Bot
from bot.sandbox.driver import SandboxDriver
from bot.sandbox.state import SandboxState
from tests.bot import github_spec as gs
from tests.bot.conftest import make_settings
from tests.bot.helpers import REPO, SECRET, ServerThread, bot_comments, experiment_body, free_port, repo_files


def _attempt(i: int, guid: str, code: int, event: str = "issues", action: str = "opened") -> HookDelivery:
    return HookDelivery(id=i, guid=guid, delivered_at=datetime.now(UTC), status_code=code, event=event,
                        action=action)


def test_selection_is_pure_and_bounded() -> None:
    attempts = [_attempt(1, "a", 0), _attempt(2, "b", 503), _attempt(3, "c", 400), _attempt(4, "d", 0),
                _attempt(5, "d", 502), _attempt(6, "d", 0), _attempt(7, "e", 0, "push", None),
                _attempt(8, "f", 0), _attempt(9, "g", 500)]
    todo, gave_up = select_redeliveries(attempts, claimed={"f"}, pending={"g"}, max_attempts=3)
    assert [a.guid for a in todo] == ["a", "b"]  # c: 4xx; d: bound; e: not handled; f: claimed; g: asked already
    assert gave_up == ["d"]
    todo, _ = select_redeliveries([_attempt(1, "a", 0), _attempt(2, "a", 0)], set(), set(), max_attempts=3)
    assert [a.id for a in todo] == [2]  # the newest attempt of a delivery is the one redelivered


def _log_failed(d: SandboxDriver, payload: dict, code: int, guid: str | None = None, times: int = 1) -> str:
    guid = guid or str(uuid.uuid4())
    for _ in range(times):
        d._ctl("hook/deliveries", guid=guid, event="issues", action="opened", body=json.dumps(payload),
               status_code=code, installation_id=1)
    return guid


def test_events_while_down_are_redelivered_at_start_and_periodically_exactly_once(
    tmp_path: Path, sandbox: tuple[str, SandboxState], app_key: tuple[Path, str]
) -> None:
    url, state = sandbox
    port = free_port()
    bot_url = f"http://127.0.0.1:{port}"
    d = SandboxDriver(url, bot_url, SECRET)
    d.setup_repo(REPO, repo_files(), app_public_key=app_key[1], app_id=1, hook_url=bot_url, hook_secret=SECRET)

    # The server is down: GitHub logs each delivery as failed ("failed to connect to host").
    down = [d.open_issue(REPO, "alice", f"[Experiment]: while down {i}", experiment_body(), labels=["experiment"])
            for i in range(2)]
    down_guids = list(d.sent)
    assert [e["status_code"] for e in d.hook_log()] == [0, 0]
    # One GitHub saw time out although the bot claimed it; one a 4xx; one already attempted to the bound.
    bot = Bot(make_settings(tmp_path, url, app_key, recovery_interval_s=0.4, recovery_start_delay_s=0.3))
    bot.worker.retry_base_s = 0.2
    claimed_n = d.open_issue(REPO, "alice", "[Experiment]: claimed", experiment_body(), labels=["experiment"])
    claimed_guid = list(d.sent)[-1]
    assert bot.ledger.claim(claimed_guid, "issues", "opened", d.sent[claimed_guid][1])
    bad_guid = _log_failed(d, json.loads(d.sent[claimed_guid][1]), 400)
    bounded_n = d.open_issue(REPO, "alice", "[Experiment]: bounded", experiment_body(), labels=["experiment"])
    bounded_guid = list(d.sent)[-1]
    _log_failed(d, json.loads(d.sent[bounded_guid][1]), 502, guid=bounded_guid, times=2)  # 3 failed attempts

    with ServerThread(create_app(bot), port=port):
        d.wait_for(lambda: all(bot_comments(d.thread(REPO, n), "preregistration") for n in [*down, claimed_n]))
        # While up, one delivery fails on the way (a proxy's 502): the periodic pass redelivers it.
        d.bot_url = f"http://127.0.0.1:{free_port()}"
        late = d.open_issue(REPO, "alice", "[Experiment]: late", experiment_body(), labels=["experiment"])
        d.bot_url = bot_url
        d.wait_for(lambda: bot_comments(d.thread(REPO, late), "preregistration"))
        passes = bot.recovery.passes if bot.recovery else 0
        d.wait_for(lambda: bot.recovery is not None and bot.recovery.passes >= passes + 2, timeout=10)
        d.wait_for(lambda: bot.ledger.queue_depth() == 0)

    log = d.hook_log()
    redelivered = [e["guid"] for e in log if e["redelivery"]]
    assert sorted(redelivered) == sorted([*down_guids, list(d.sent)[-1]])  # each exactly once, all succeeded
    assert all(e["status_code"] == 202 for e in log if e["redelivery"])
    assert claimed_guid not in redelivered and bad_guid not in redelivered and bounded_guid not in redelivered
    for n in [*down, claimed_n, late]:
        assert len(bot_comments(d.thread(REPO, n), "preregistration")) == 1, n
    assert not bot_comments(d.thread(REPO, bounded_n), "preregistration")
    for guid in [*down_guids, claimed_guid]:
        assert (bot.ledger.delivery_status(guid) or {}).get("status") == "done"
    counts = {s.labels["outcome"]: s.value for m in bot.metrics.registry.collect() if m.name == "openlab_recovery"
              for s in m.samples if s.name == "openlab_recovery_total"}
    assert counts == {"redelivered": 3.0, "gave_up": 1.0}, counts  # the give-up counted once, not per pass

    # The recovery calls are operations of GitHub's REST description, answered in its shapes, with the App JWT.
    calls = [r for r in state.requests if r["path"].startswith("/app/hook/")]
    assert {r["method"] for r in calls} == {"GET", "POST"} and all(r["status"] in (200, 202) for r in calls)
    if gs.OPENAPI.exists():
        for r in calls:
            found = gs.operation(r["method"], r["path"])
            assert found is not None, r["path"]
            assert not gs.request_body_errors(found[1], r["body"])
        page = httpx.get(f"{url}/app/hook/deliveries", params={"per_page": 2},
                         headers={"Authorization": f"Bearer {bot._auth.app_jwt()}"})  # type: ignore[union-attr]
        assert 'rel="next"' in page.headers["link"] and "cursor=v1_" in page.headers["link"]
        schema = gs.response_schema(gs.operation("GET", "/app/hook/deliveries")[1], 200)  # type: ignore[index]
        assert schema is not None and not list(gs.validator(schema).iter_errors(page.json()))


def test_delivery_log_needs_the_app_jwt(sandbox: tuple[str, SandboxState]) -> None:
    url, _ = sandbox
    assert httpx.get(f"{url}/app/hook/deliveries").status_code == 401
    assert httpx.post(f"{url}/app/hook/deliveries/1/attempts",
                      headers={"Authorization": "Bearer ghs_installation_token"}).status_code == 401


@pytest.mark.parametrize("interval", [0.0])
def test_recovery_is_off_with_a_fixed_token_or_zero_interval(
    tmp_path: Path, app_key: tuple[Path, str], interval: float
) -> None:
    assert Bot(make_settings(tmp_path, "http://127.0.0.1:9", app_key, recovery_interval_s=interval)).recovery is None
    settings = make_settings(tmp_path, "http://127.0.0.1:9", app_key, recovery_interval_s=60)
    assert Bot(settings, token="ghs_fixed").recovery is None
    assert Bot(settings).recovery is not None


def test_log_is_read_across_cursor_pages_within_the_lookback(
    tmp_path: Path, sandbox: tuple[str, SandboxState], app_key: tuple[Path, str]
) -> None:
    url, _ = sandbox
    d = SandboxDriver(url, None, SECRET)
    d.configure(app_public_key=app_key[1], app_id=1)
    payload = {"action": "opened"}
    for _ in range(105):  # more than one page of 100
        _log_failed(d, payload, 0)
    _log_failed(d, payload, 200)  # a success: not in the status=failure listing
    bot = Bot(make_settings(tmp_path, url, app_key, recovery_interval_s=60))
    assert bot.recovery is not None
    attempts = bot.recovery.failed_attempts()
    assert len(attempts) == 105 and len({a.id for a in attempts}) == 105
    assert [a.id for a in attempts] == sorted((a.id for a in attempts), reverse=True)  # newest first
    bot.recovery.clock = lambda: datetime.now(UTC).timestamp() + 3 * bot.recovery.lookback_s  # type: ignore[union-attr]
    assert bot.recovery.failed_attempts() == []  # everything is older than the window
