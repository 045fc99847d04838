"""The browser app over HTTP: listing, paging, filtering, refusals and escaping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from leaderboard.browse.app import create_app


@pytest.fixture
def store(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    rows = [
        {"id": i, "text": f"<script>alert({i})</script> text {i}", "attributes": {"q": i / 10}}
        for i in range(30)
    ]
    (tmp_path / "docs" / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "secret.txt").write_text("x")
    return tmp_path


def test_listing_and_pages(store: Path) -> None:
    c = TestClient(create_app(str(store)))
    r = c.get("/files", params={"path": "docs"})
    assert r.status_code == 200 and "s.jsonl" in r.text
    r = c.get("/shard", params={"path": "docs/s.jsonl", "size": 10, "page": 1})
    assert r.status_code == 200
    assert r.text.count('class="doc"') == 10 and 'id="next"' in r.text and 'id="prev"' in r.text
    assert "<script>alert" not in r.text and "&lt;script&gt;alert(10)" in r.text


def test_filter_and_api(store: Path) -> None:
    c = TestClient(create_app(str(store)))
    data = c.get("/api/shard", params={"path": "docs/s.jsonl", "filter": "q>=2.5", "size": 100}).json()
    assert [d["id"] for d in data["documents"]] == ["25", "26", "27", "28", "29"]
    bad = c.get("/shard", params={"path": "docs/s.jsonl", "filter": "q is big"})
    assert bad.status_code == 400 and "ATTRIBUTE OP VALUE" in bad.text


@pytest.mark.parametrize("path", ["../", "/etc", "%2e%2e/etc/passwd", "file:///etc/passwd"])
def test_refuses_paths_outside(store: Path, path: str) -> None:
    c = TestClient(create_app(str(store / "docs")))
    for route in ("/files", "/shard", "/cache"):
        r = c.get(route, params={"path": path})
        assert r.status_code == 403, (route, path)
        assert "refused" in r.text


def test_missing_and_wrong_kind(store: Path) -> None:
    c = TestClient(create_app(str(store)))
    assert c.get("/shard", params={"path": "nope.jsonl"}).status_code == 404
    assert c.get("/shard", params={"path": "secret.txt"}).status_code == 400
    assert c.get("/cache", params={"path": "docs"}).status_code == 404
