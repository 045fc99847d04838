"""Execution pages from executor records: statuses, DAG edges, links, escaping, bad records."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from leaderboard.browse.app import create_app
from leaderboard.executions import https_remote, load_executions, read_execution
from tests.browse.records import write_launch


def test_view_maps_statuses_and_edges(tmp_path: Path) -> None:
    url = write_launch(
        str(tmp_path), "run-1", {"ingest": "succeeded", "tokenize": "running", "filter": "failed"}
    )
    ex = read_execution(url)
    assert [s.status for s in ex.steps] == ["succeeded", "running", "failed", "waiting"]
    assert ex.steps[3].deps == []  # train has no step record yet: no edges from it, but its box is drawn
    assert len(ex.edges) == 2  # tokenize <- ingest, filter <- ingest
    assert ex.code_url == "https://github.com/lab/openlab/blob/" + "a" * 40 + "/experiments/exp1_demo.py"
    cols = {s.identity: s.x for s in ex.steps}
    assert cols["ingest@v1"] < cols["tokenize@v1"] == cols["filter@v1"]


def test_complete_launch_links_wandb(tmp_path: Path) -> None:
    outcomes = dict.fromkeys(("ingest", "tokenize", "filter", "train"), "succeeded")
    ex = read_execution(write_launch(str(tmp_path), "run-2", outcomes, status="SUCCESS"))
    assert ex.status == "succeeded" and not ex.running
    assert ex.steps[3].wandb_url == "https://wandb.ai/lab/openlab/runs/r1"
    assert len(ex.edges) == 4


def test_bad_records_are_skipped_with_a_warning(tmp_path: Path) -> None:
    write_launch(str(tmp_path), "good", {"ingest": "succeeded"})
    (tmp_path / "experiments" / "garbled.json").write_text("{not json")
    (tmp_path / "experiments" / "future.json").write_text('{"schema_version": 99}')
    warnings: list[str] = []
    views = load_executions(str(tmp_path), warnings)
    assert [v.run_id for v in views] == ["good"]
    assert len(warnings) == 2 and any("garbled.json" in w for w in warnings)
    assert any("newer than this openlab understands" in w for w in warnings)


def test_live_page_refreshes_while_running_and_escapes(tmp_path: Path) -> None:
    write_launch(str(tmp_path), "run-3", {"ingest": "succeeded", "filter": "failed"})
    c = TestClient(create_app(str(tmp_path)))
    r = c.get("/execution", params={"path": "experiments/run-3.json"})
    assert r.status_code == 200
    assert 'http-equiv="refresh"' in r.text
    assert "<b>boom</b>" not in r.text and "&lt;b&gt;boom&lt;/b&gt;" in r.text
    assert "<script>x</script>" not in r.text
    assert r.text.count('class="node ') == 4
    assert 'href="/files?path=ingest/v1"' in r.text
    listing = c.get("/files", params={"path": "experiments"})
    assert 'href="/execution?path=experiments/run-3.json"' in listing.text


def test_https_remote_forms() -> None:
    assert https_remote("https://github.com/o/r.git") == "https://github.com/o/r"
    assert https_remote("https://x-access-token:abc@github.com/o/r") == "https://github.com/o/r"
    assert https_remote("git@github.com:o/r.git") == "https://github.com/o/r"
    assert https_remote("/local/path") is None
    assert https_remote(None) is None
