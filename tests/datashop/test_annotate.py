"""Annotation: label parsing, the local JAX engine, and the openai engine against a real server process."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from runner.annotation.labels import check_template, from_logprobs, parse_score, render_prompt
from runner.annotation.openai_engine import OpenAIEngine

PROMPT = ("Rate how much the following text is about cooking or food, from 0 (not at all) to 5 (entirely).\n\n"
          "Text: {example}\n\nReply with the score only.")
DOCS = ["Preheat the oven to 200C. Mix flour, butter and sugar, then bake the cookies for 12 minutes.",
        "The socket module provides access to the BSD socket interface for network programming.",
        "Slice the onions and fry them in olive oil until golden, then add garlic and tomatoes."]


def test_parse_score_like_marin() -> None:
    assert parse_score("The text is about food.\nFinal score: 4", 0, 5) == (4, None)
    assert parse_score("3", 0, 5) == (3, None)
    assert parse_score("Final score: 9", 0, 5) == (None, "score 9 out of range 0..5")
    assert parse_score("I cannot rate this.", 0, 5) == (None, "no score in the answer")


def test_logprob_labels_and_garbage() -> None:
    ann = from_logprobs({"4": -0.2, "5": -2.0, "The": -4.0}, 0, 5, 0.5)
    assert ann.label == 4 and ann.error is None and 0.8 < ann.confidence <= 1
    bad = from_logprobs({"The": -0.1, "1": -3.0}, 0, 5, 0.5)
    assert bad.label is None and "allowed answers hold" in bad.error


def test_prompt_checks() -> None:
    assert check_template(PROMPT) == []
    assert "must contain `{example}`" in check_template("Rate this text from 0 to 5 please.")[0]
    assert any("characters" in p for p in check_template("{example}" + "x" * 5000))
    assert render_prompt("a {example} {not_a_field}", "{x}") == "a {x} {not_a_field}"


@pytest.fixture(scope="module")
def local_labels(smol) -> list:  # type: ignore[no-untyped-def]
    from runner.annotation.local import LocalEngine

    return LocalEngine().annotate([render_prompt(PROMPT, d) for d in DOCS])


def test_local_engine_labels(local_labels: list) -> None:
    assert all(a.label is not None and a.error is None and a.tokens > 40 for a in local_labels), local_labels


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "runner.cli", "annotate-server", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(1)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_openai_engine_against_real_server_matches_local(server: str, local_labels: list) -> None:
    name = httpx.get(f"{server}/models").json()["data"][0]["id"]
    engine = OpenAIEngine(server, name, concurrency=2, requests_per_second=20)
    remote = engine.annotate([render_prompt(PROMPT, d) for d in DOCS])
    assert [a.label for a in remote] == [a.label for a in local_labels]
    # Plain generation through the same endpoint: OpenAI's response shape.
    r = httpx.post(f"{server}/chat/completions", timeout=120,
                   json={"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 3})
    body = r.json()
    assert r.status_code == 200 and body["usage"]["completion_tokens"] <= 3 and body["choices"][0]["message"]["content"]
    bad = httpx.post(f"{server}/chat/completions", json={"messages": []}, timeout=30)
    assert bad.status_code == 400 and "messages" in bad.json()["error"]["message"]


def test_openai_engine_records_failures(tmp_path: Path) -> None:
    engine = OpenAIEngine(f"http://127.0.0.1:{_free_port()}/v1", "m", retries=1, timeout_s=2)
    out = engine.annotate([render_prompt(PROMPT, DOCS[0])])
    assert out[0].label is None and "ConnectError" in out[0].error and engine.retried == 1
