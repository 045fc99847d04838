"""Shortcuts for the fault tests: open a PR at a real git commit and apply the bot core's DispatchRun."""

from __future__ import annotations

from typing import Any

from bot.actions import DispatchRun, run_id
from tests.bot_runs.conftest import LAB, Lab
from tests.bot_runs.experiments import write_results_experiment
from tests.leaderboard.factory import make_results


def valid_results_json(i: int = 5) -> str:
    return make_results(i, run_id=f"fault-{i}", name=f"fault-{i}").model_dump_json()


def open_fault_pull(lab: Lab, branch: str, mode: str, results: str | None = None) -> int:
    """A PR adding `experiments/speedrun/<branch>/<branch>.py` that writes ``results`` (mode: valid, raw, ...)."""
    name = branch.replace("-", "_")
    files = {f"experiments/speedrun/{name}/{name}.py": write_results_experiment(results or valid_results_json(), mode)}
    with lab.state.lock:
        main = lab.state.repos[LAB].branches["main"]
    env = lab.driver._ctl("pulls", repo=LAB, user="maintainer", branch=branch, files={}, title=branch,
                          body="Preregistration: #1")
    n = int(env["number"])
    sha = lab.commit(branch, files, base=main)
    with lab.state.lock:
        t = lab.state.threads[(LAB, n)]
        assert t.pull is not None
        t.pull["head_sha"] = sha
    return n


def dispatch(lab: Lab, pr: int, attempt: int = 1, user: str = "maintainer") -> dict[str, Any]:
    """Apply DispatchRun through the bot core's executor (which calls our dispatcher), as `/run` would."""
    with lab.state.lock:
        t = lab.state.threads[(LAB, pr)]
        assert t.pull is not None
        sha = t.pull["head_sha"]
        files = lab.state.repos[LAB].commits[sha]
    experiment = next(p for p in files if p.startswith("experiments/speedrun/") and p.endswith(".py"))
    rid = run_id(LAB, pr, sha, experiment, attempt)
    _, executor = lab.bot.env_for(1)
    executor.apply(DispatchRun(repo=LAB, run_id=rid, pr=pr, sha=sha, experiment=experiment, attempt=attempt,
                               requested_by=user, installation_id=1))
    run = lab.services.ledger.run(rid)
    assert run is not None
    return run


def bot_comments(lab: Lab, pr: int, kind: str) -> list[str]:
    """Bodies of the bot's comments of ``kind``, including the sections of the sticky PR comment (bot.sticky)."""
    from bot.sticky import section_of

    mine = [c["body"] for c in lab.driver.thread(LAB, pr)["comments"] if c["user"] == "openlab[bot]"]
    found = [b for b in mine if b.startswith(f"<!-- openlab:{kind}:")]
    for b in mine:
        if b.startswith("<!-- openlab:pr:") and kind != "pr":
            found += section_of(b, kind)
    return found


def checks(lab: Lab, run_id_: str) -> list[dict[str, Any]]:
    return [c for c in lab.state.check_runs.values() if c["name"] == "openlab/run" and c["external_id"] == run_id_]


def explain(lab: Lab, run_id_: str) -> str:
    """The run's report and job log, for assertion messages."""
    report = lab.services.states.get(run_id_)
    return f"{report}\n--- log ---\n{lab.services.backend.logs_tail(run_id_, 40)}"
