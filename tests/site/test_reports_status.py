"""A finished experiment reads as done on the reports index, whatever comments exist yet."""

from __future__ import annotations

from bot.reports.build import _status

OPEN = {"state": "open"}


def test_ended_executions_make_an_experiment_done() -> None:
    assert _status(OPEN, {"run"}, False, {"preregistered"}, ["succeeded"]) == "done"
    assert _status(OPEN, {"run"}, False, {"preregistered"}, ["succeeded", "failed"]) == "done"


def test_a_live_execution_keeps_it_running() -> None:
    assert _status(OPEN, {"run"}, False, {"preregistered"}, ["succeeded", "running"]) == "running"
    assert _status(OPEN, {"run"}, False, {"preregistered"}) == "running"


def test_reports_index_shows_the_headline_result(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from bot.reports.model import ExecutionLink, ExperimentReport, Group
    from bot.reports.render import write_reports

    done = ExperimentReport(number=7, title="t", url="https://github.com/lab/x/issues/7", kind="experiment",
                            status="done", topics=[], author="ada", created_at="2026-01-01",
                            executions=[ExecutionLink(title="A (succeeded)", url="../executions/r-a.html",
                                                      run_id="r-a", status="succeeded"),
                                        ExecutionLink(title="B (succeeded)", url="../executions/r-b.html",
                                                      run_id="r-b", status="succeeded"),
                                        ExecutionLink(title="C (failed)", url="../executions/r-c.html",
                                                      run_id="r-c", status="failed")])
    (tmp_path / "runs.json").write_text(json.dumps([{"run_id": "r-a", "bpb": 1.5},
                                                    {"run_id": "r-b", "bpb": 1.25, "model_flops": 3e15}]))
    html = write_reports([Group(title="g", reports=[done])], tmp_path, "lab/x", "https://github.com/lab/x").read_text()
    assert '<th>result</th>' in html
    # the run is known by its run id field, not by the link's title
    assert 'href="../runs/r-b.html">BPB 1.2500</a><br><span class="muted">3.00e+15 FLOPs</span>' in html
    saved = json.loads((tmp_path / "reports" / "reports.json").read_text())
    assert saved[0]["reports"][0]["result"] == {"run_id": "r-b", "bpb": 1.25, "model_flops": 3e15,
                                                "url": "../runs/r-b.html"}
