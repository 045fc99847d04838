"""The GitHub client's rate-limit protocol and App auth, with `responses` (narrow unit tests)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import jwt
import pytest
import responses

from bot.github.auth import AppAuth
from bot.github.client import GitHubClient, GitHubError, RateLimited
from bot.github.escape import MAX_BODY, truncate_body
from tests.bot.helpers import rsa_pair

API = "https://api.github.test"


def client(**kw: object) -> tuple[GitHubClient, list[float]]:
    slept: list[float] = []
    gh = GitHubClient(API, lambda: "tok", write_interval_s=0, sleep=slept.append, **kw)  # type: ignore[arg-type]
    return gh, slept


@responses.activate
def test_secondary_limit_honours_retry_after() -> None:
    url = f"{API}/repos/o/r/issues/1/comments"
    responses.post(url, status=403, headers={"retry-after": "7"}, json={"message": "secondary rate limit"})
    responses.post(url, status=201, json={"id": 5})
    gh, slept = client()
    assert gh.create_comment("o/r", 1, "hi") == {"id": 5}
    assert slept == [7.0]
    assert responses.calls[1].request.headers["Authorization"] == "Bearer tok"


@responses.activate
def test_primary_limit_waits_until_reset() -> None:
    url = f"{API}/repos/o/r/issues/1"
    reset = int(time.time()) + 30
    responses.get(url, status=403, headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
                  json={"message": "API rate limit exceeded"})
    responses.get(url, status=200, json={"number": 1})
    gh, slept = client()
    assert gh.get_issue("o/r", 1) == {"number": 1}
    assert 29 <= slept[0] <= 32


@responses.activate
def test_secondary_without_retry_after_waits_a_minute_then_doubles_then_gives_up() -> None:
    url = f"{API}/repos/o/r/issues/1/labels"
    for _ in range(3):
        responses.post(url, status=403, json={"message": "You have exceeded a secondary rate limit"})
    gh, slept = client(max_retries=2, max_wait_s=1000)
    with pytest.raises(RateLimited):
        gh.add_labels("o/r", 1, ["x"])
    assert slept == [60.0, 120.0]


@responses.activate
def test_long_waits_are_not_slept_in_process() -> None:
    responses.get(f"{API}/repos/o/r/issues/1", status=429, headers={"retry-after": "3600"})
    gh, slept = client()
    with pytest.raises(RateLimited) as err:
        gh.get_issue("o/r", 1)
    assert err.value.wait_s == 3600 and slept == []


@responses.activate
def test_5xx_backoff_and_4xx_raise_without_retry() -> None:
    url = f"{API}/repos/o/r/pulls/2"
    responses.get(url, status=502)
    responses.get(url, status=503)
    responses.get(url, status=200, json={"number": 2})
    gh, slept = client(backoff_s=0.5)
    assert gh.get_pull("o/r", 2)["number"] == 2 and slept == [0.5, 1.0]
    responses.post(f"{API}/repos/o/r/issues/3/comments", status=422, json={"message": "Body is too long"})
    with pytest.raises(GitHubError) as err:
        gh.create_comment("o/r", 3, "x")
    assert err.value.status == 422 and "Body is too long" in str(err.value)
    assert len([c for c in responses.calls if "comments" in c.request.url]) == 1


@responses.activate
def test_writes_are_paced() -> None:
    responses.post(f"{API}/repos/o/r/issues/1/labels", status=200, json=[])
    slept: list[float] = []
    gh = GitHubClient(API, lambda: "t", write_interval_s=1.0, sleep=slept.append)
    gh.add_labels("o/r", 1, ["a"])
    gh.add_labels("o/r", 1, ["b"])
    assert len(slept) == 1 and 0.9 < slept[0] <= 1.0


def test_bodies_are_cut_below_githubs_limit() -> None:
    body = truncate_body("x" * 100_000)
    assert len(body) <= MAX_BODY < 65_536 and body.endswith("longer than GitHub allows in one comment)")


@responses.activate
def test_app_auth_jwt_and_token_cache() -> None:
    private, public = rsa_pair()
    expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    responses.post(f"{API}/app/installations/42/access_tokens", status=201,
                   json={"token": "ghs_a", "expires_at": expires})
    auth = AppAuth("123", private, API)
    assert auth.installation_token(42) == "ghs_a"
    assert auth.installation_token(42) == "ghs_a"
    assert auth.exchanges == 1  # cached until shortly before expiry
    token = responses.calls[0].request.headers["Authorization"].removeprefix("Bearer ")
    claims = jwt.decode(token, public, algorithms=["RS256"])
    assert claims["iss"] == "123" and claims["iat"] <= time.time() - 59 and claims["exp"] - claims["iat"] <= 600
    auth._cache[42] = ("ghs_a", time.time() + 120)  # within the refresh margin: exchanged again
    responses.post(f"{API}/app/installations/42/access_tokens", status=201, json={"token": "ghs_b",
                                                                                    "expires_at": expires})
    assert auth.installation_token(42) == "ghs_b"
