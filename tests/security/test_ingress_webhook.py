"""Bad input at the webhook never gets a 5xx: the real `openlab serve` process, attacked over HTTP and raw sockets.

A 5xx tells GitHub (and whoever presses "Redeliver") to try again, so a poison delivery would come back forever;
every request problem must be a 4xx with a JSON error. Slow clients are cut off (408 / closed), headers are
bounded, and the server answers normally afterwards.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bot.ingress.app import sign
from bot.ingress.serving import free_port

SECRET = b"ingress-test-secret-1"
TIMEOUT_S = 1.0  # OPENLAB_REQUEST_TIMEOUT_S of the server under test


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """`openlab serve` as a real process (worker off: these tests are about the front door): (url, its folder)."""
    tmp = tmp_path_factory.mktemp("ingress")
    port = free_port()
    env = {**os.environ, "OPENLAB_WEBHOOK_SECRETS": SECRET.decode(), "OPENLAB_WORKER": "off",
           "OPENLAB_LEDGER_URL": f"sqlite:///{tmp}/ledger.sqlite3", "OPENLAB_REQUEST_TIMEOUT_S": str(TIMEOUT_S),
           "OPENLAB_GITHUB_API_URL": "http://127.0.0.1:9", "INGRESS_TEST_TOKEN": "unused"}
    log = (tmp / "serve.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "runner.cli", "serve", "--port",
                             str(port), "--token-env", "INGRESS_TEST_TOKEN"], env=env, cwd=tmp,
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, (tmp / "serve.log").read_text()
            time.sleep(0.2)
        yield url, tmp
        assert proc.poll() is None, "the server died under bad input"
        text = (tmp / "serve.log").read_text()  # bad input reached no catch-all (the locked ledger is logged)
        assert "unexpected error" not in text and "RecursionError" not in text
    finally:
        proc.terminate()
        proc.wait(20)


@pytest.fixture
def server(served: tuple[str, Path]) -> str:
    return served[0]


def _headers(body: bytes, **extra: str) -> dict[str, str]:
    return {"X-Hub-Signature-256": sign(SECRET, body), "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": f"d-{time.monotonic_ns()}", "Content-Type": "application/json", **extra}


def _raw(port_url: str, data: bytes, wait_s: float = 10.0) -> tuple[bytes, float]:
    """Send raw bytes, read until the server closes (or wait_s): (everything received, seconds to first byte)."""
    host, port = port_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=wait_s) as s:
        s.sendall(data)
        start, got, first = time.monotonic(), b"", None
        try:
            while chunk := s.recv(65536):
                first = first if first is not None else time.monotonic() - start
                got += chunk
        except (TimeoutError, ConnectionResetError):
            pass
        return got, first if first is not None else time.monotonic() - start


def test_deep_json_is_400_not_503(server: str) -> None:
    for deep in (b'{"a":' * 5000 + b"1" + b"}" * 5000, b"[" * 100_000 + b"]" * 100_000):
        r = httpx.post(server, content=deep, headers=_headers(deep))
        assert r.status_code == 400 and "nested deeper than 64" in r.json()["error"]
    # the same body unsigned is a 401 (the signature is checked before anything parses the body)
    r = httpx.post(server + "/webhook", content=b"[" * 5000, headers={"X-GitHub-Event": "issues",
                                                                      "X-GitHub-Delivery": "x"})
    assert r.status_code == 401 and "error" in r.json()


def test_oversized_bodies_get_413_not_a_reset(server: str) -> None:
    big = b" " * (26 * 1024 * 1024)  # over GitHub's 25 MB cap; sent whole before the answer is read
    r = httpx.post(server, content=big, headers=_headers(big), timeout=60)
    assert r.status_code == 413 and "body over" in r.json()["error"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: the stream is capped as it arrives
        for _ in range(26):
            yield b" " * (1024 * 1024)

    r = httpx.post(server, content=chunks(), headers=_headers(b""), timeout=60)
    assert r.status_code == 413 and r.json()["error"].startswith("body over")
    # a declared length far past any real delivery is refused at once, without waiting for the body
    got, first = _raw(server, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999999\r\n\r\n{")
    assert got.startswith(b"HTTP/1.1 413") and b'"error"' in got and first < 5


def test_signature_content_type_and_headers(server: str) -> None:
    body = b'{"action": "opened"}'
    assert httpx.post(server, content=body, headers={**_headers(body), "X-Hub-Signature-256": "sha256=00"}
                      ).status_code == 401
    r = httpx.post(server, content=body, headers={**_headers(body), "Content-Type": "text/plain"})
    assert r.status_code == 415 and "application/json" in r.json()["error"]
    r = httpx.post(server, content=body, headers={**_headers(body), "X-GitHub-Delivery": "d" * 100})
    assert r.status_code == 400 and "X-GitHub-Delivery" in r.json()["error"]
    for bad in (b"{not json", b"\xff\xfe", b"[1, 2]"):
        r = httpx.post(server, content=bad, headers=_headers(bad))
        assert r.status_code == 400 and r.json()["error"].startswith("webhook body:")
    got, _ = _raw(server, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 400")
    got, _ = _raw(server, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 1_000_000 + b"\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 400")  # headers are bounded by the HTTP layer


def test_slow_clients_are_cut_off(server: str) -> None:
    got, first = _raw(server, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"a\": ")
    head, _, body = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408") and b"connection: close" in head.lower()
    assert "not received within" in json.loads(body)["error"] and TIMEOUT_S - 0.2 < first < TIMEOUT_S + 4
    got, first = _raw(server, b"POST / HTTP/1.1\r\nHost: x\r\n")  # a head that never ends: disconnected
    assert got == b"" and first < TIMEOUT_S + 4


def test_every_route_answers_4xx_to_bad_requests(server: str) -> None:
    assert httpx.get(server).status_code == 405
    assert httpx.post(server + "/healthz", content=b"[" * 5000).status_code == 405
    assert httpx.post(server + "/metrics", content=b"x").status_code == 405
    assert httpx.get(server + "/nope").status_code == 404
    assert httpx.get(server + "/healthz", params={"q": "[" * 5000}).json()["ok"] is True
    assert "openlab_deliveries_total" in httpx.get(server + "/metrics").text
    ok = json.dumps({"action": "opened", "issue": {}, "repository": {}, "sender": {}}).encode()
    assert httpx.post(server, content=ok, headers=_headers(ok)).status_code == 202  # real deliveries still queue


def test_no_5xx_path_left(server: str) -> None:
    """A sweep of odd requests over every route: none may answer 5xx."""
    odd: list[tuple[str, str, bytes, dict[str, str]]] = [
        ("POST", "/", b"", _headers(b"")),
        ("POST", "/webhook", b"null", _headers(b"null")),
        ("POST", "/", b'{"action": ' + b"[" * 900 + b"]" * 900 + b"}", {}),
        ("PUT", "/", b"{}", {}),
        ("GET", "/metrics", b"", {"Accept": "x" * 4000}),
        ("DELETE", "/healthz", b"", {}),
    ]
    for method, path, body, headers in odd:
        if method == "POST" and path == "/" and not headers:
            headers = _headers(body)
        r = httpx.request(method, server + path, content=body, headers=headers)
        assert r.status_code < 500, (method, path, r.status_code, r.text)


def test_a_real_transient_fault_is_the_only_5xx(served: tuple[str, Path]) -> None:
    """The ledger's inbox locked by another writer past its busy timeout: 503 (redeliver), then 202 once free."""
    url, folder = served
    body = json.dumps({"action": "opened", "issue": {}, "repository": {}, "sender": {}}).encode()
    headers = _headers(body)
    lock = sqlite3.connect(folder / "ledger.inbox.sqlite3", isolation_level=None)
    try:
        lock.execute("BEGIN EXCLUSIVE")
        r = httpx.post(url, content=body, headers=headers, timeout=30)
        assert r.status_code == 503 and "redeliver" in r.json()["error"]
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert httpx.post(url, content=body, headers=headers).status_code == 202  # the redelivery goes through
