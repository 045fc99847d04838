"""The data browser shows a run's metrics.jsonl as a table and links results.json as JSON."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from leaderboard.browse.app import create_app


def test_metrics_table_and_results_link(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "metrics.jsonl").write_text(
        '{"step": 0, "train/loss": 5.25}\nnot json\n{"step": 10, "train/loss": 4.5, "train/lr": 0.0003}\n'
    )
    (run / "results.json").write_text(json.dumps({"run_id": "r1", "bpb": 1.5}))
    client = TestClient(create_app(str(tmp_path)))
    listing = client.get("/files", params={"path": "runs/r1"}).text
    assert 'href="/metrics?path=runs/r1/metrics.jsonl"' in listing
    assert 'href="/raw?path=runs/r1/results.json"' in listing
    page = client.get("/metrics", params={"path": "runs/r1/metrics.jsonl"})
    assert page.status_code == 200
    assert "<th>step</th><th>train/loss</th><th>train/lr</th>" in page.text
    assert "5.25" in page.text and "0.0003" in page.text and "1 unreadable line skipped" in page.text
    raw = client.get("/raw", params={"path": "runs/r1/results.json"})
    assert raw.headers["content-type"] == "application/json" and raw.json()["bpb"] == 1.5
    assert client.get("/raw", params={"path": "runs/r1/metrics.jsonl"}).status_code == 400
    assert client.get("/metrics", params={"path": "../etc/passwd.jsonl"}).status_code == 403
