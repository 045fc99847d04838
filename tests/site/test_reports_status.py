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
