"""An execution page's footer states where it comes from (not "0 runs … no key given"); node labels fit."""

from __future__ import annotations

from pathlib import Path

from leaderboard.execution_pages import page_name, write_execution_pages
from tests.browse.records import write_launch


def test_execution_page_footer_and_labels(tmp_path: Path) -> None:
    outcomes = dict.fromkeys(("ingest", "tokenize", "filter", "train"), "succeeded")
    write_launch(str(tmp_path / "store"), "run-2", outcomes, status="SUCCESS")
    views, _ = write_execution_pages(str(tmp_path / "store"), tmp_path / "site")
    html = (tmp_path / "site" / "executions" / page_name(views[0].run_id)).read_text()
    assert "no key given" not in html and "from 0 runs" not in html
    assert "run records in the lab&#39;s store" in html or "run records in the lab's store" in html
    assert 'width="280" height="44"' in html
    for s in views[0].steps:
        if len(s.identity) <= views[0].node_chars:
            assert f'class="node-name">{s.identity}</text>' in html


def test_execution_page_has_no_local_path_and_no_stale_plan_note(tmp_path: Path) -> None:
    outcomes = dict.fromkeys(("ingest", "tokenize", "filter", "train"), "succeeded")
    store = tmp_path / "store"
    write_launch(str(store), "run-3", outcomes, status="SUCCESS")
    views, _ = write_execution_pages(str(store), tmp_path / "site")
    html = (tmp_path / "site" / "executions" / page_name(views[0].run_id)).read_text()
    assert str(tmp_path) not in html
    for s in views[0].steps:
        if s.status == "succeeded" and s.note:
            assert f'<span class="muted">{s.note}</span>' not in html


def test_execution_page_links_the_run_page_when_the_leaderboard_has_it(tmp_path: Path) -> None:
    from leaderboard.rows import slugify

    store, site = tmp_path / "store", tmp_path / "site"
    write_launch(str(store), "run-4", dict.fromkeys(("ingest", "tokenize", "filter", "train"), "succeeded"))
    views, _ = write_execution_pages(str(store), site)
    page = site / "executions" / page_name(views[0].run_id)
    assert 'id="run-link"' not in page.read_text()
    (site / "runs").mkdir()
    (site / "runs" / f"{slugify(views[0].run_id)}.html").write_text("<p>run</p>")
    write_execution_pages(str(store), site)
    assert f'href="../runs/{slugify(views[0].run_id)}.html" id="run-link"' in page.read_text()
