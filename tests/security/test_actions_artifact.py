"""Actions mode trusts only the event: a plan artifact (written by a job that ran PR code) naming another PR or
another commit, or over its bounds, is refused; nothing is ever posted to a PR the event does not name."""

# ruff: noqa: F811 - pytest fixtures imported from tests.bot.conftest are test parameters by design
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bot.config.settings import BotSettings
from bot.ingress.actions_mode import MAX_FILE_BYTES, ArtifactRefused, plan_report
from bot.ingress.service import Bot
from bot.sandbox.driver import SandboxDriver
from bot.sandbox.state import SandboxState
from runner.errors import ConfigError
from tests.bot.conftest import sandbox  # noqa: F401 - fixture
from tests.bot.helpers import REPO, SECRET, experiment_file, repo_files

TOKEN = "ghs_actions_token"


def _setup(tmp_path: Path, url: str) -> tuple[SandboxDriver, Bot, dict[str, tuple[int, str]]]:
    d = SandboxDriver(url, None, SECRET)
    d.setup_repo(REPO, repo_files(), tokens={TOKEN: "github-actions[bot]"}, roles={"maintainer": "write"})
    prs = {}
    for who, n in (("victim", 41), ("attacker", 42)):
        env = d._ctl("pulls", repo=REPO, user=who, branch=f"b-{who}", title=who,
                     files={f"experiments/exp{n:03d}_{who}.py": experiment_file(n)}, body="")
        prs[who] = (int(env["number"]), env["pull_request"]["head"]["sha"])
    settings = BotSettings(ledger_url=f"sqlite:///{tmp_path}/ledger.sqlite3", github_api_url=url,
                           write_interval_s=0.0, bot_login="github-actions[bot]", worker="off")
    return d, Bot(settings, token=TOKEN, planner_factory=lambda gh: None), prs


def _artifact(tmp_path: Path, meta: dict | None, files: dict[str, str | bytes]) -> Path:
    folder = tmp_path / f"plan-{len(list(tmp_path.glob('plan-*')))}"
    folder.mkdir()
    if meta is not None:
        (folder / "meta.json").write_text(json.dumps(meta))
    for name, data in files.items():
        (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    return folder


def _event(tmp_path: Path, sha: str, prs: list[int], head_repo: str = REPO) -> str:
    path = tmp_path / f"event-{sha[:7]}-{'-'.join(map(str, prs))}.json"
    path.write_text(json.dumps({"action": "completed", "workflow_run": {
        "id": 9, "event": "pull_request", "head_sha": sha, "pull_requests": [{"number": n} for n in prs],
        "head_repository": {"full_name": head_repo}}}))
    return str(path)


def _posted(d: SandboxDriver, pr: int) -> tuple[list[dict], list[str]]:
    t = d.thread(REPO, pr)
    return t["check_runs"], [c["body"] for c in t["comments"]]


def _plan_failed(path: str) -> dict[str, str]:
    return {"1.file": path + "\n", "1.err": "error: the experiment file raised\n", "1.rc": "2\n"}


def test_poisoned_artifact_never_reaches_another_pr(tmp_path: Path, sandbox: tuple[str, SandboxState]) -> None:
    d, bot, prs = _setup(tmp_path, sandbox[0])
    (victim, victim_sha), (attacker, attacker_sha) = prs["victim"], prs["attacker"]
    mine = _plan_failed("experiments/exp042_attacker.py")
    # the attacker's own plan job claims the victim's PR (and then the victim's SHA): refused
    for meta in ({"pr": victim, "head_sha": attacker_sha}, {"pr": attacker, "head_sha": victim_sha}):
        with pytest.raises(ArtifactRefused, match="refusing it"):
            plan_report(bot, _artifact(tmp_path, meta, mine), REPO, _event(tmp_path, attacker_sha, [attacker]))
    assert _posted(d, victim) == ([], [])
    checks, comments = _posted(d, attacker)  # the attacker's own PR is told why
    assert checks and all(c["conclusion"] == "failure" and c["head_sha"] == attacker_sha for c in checks)
    assert "refusing it" in comments[-1] and f"PR #{victim}" not in comments[-1]
    # a fork PR (GitHub lists no pull_requests): the hint must match GitHub's own head for that PR
    with pytest.raises(ArtifactRefused, match=f"PR #{victim}, whose head is not"):
        plan_report(bot, _artifact(tmp_path, {"pr": victim, "head_sha": attacker_sha}, mine), REPO,
                    _event(tmp_path, attacker_sha, []))
    assert _posted(d, victim) == ([], [])
    # and the genuine report still goes through, to the PR and SHA of the event
    plan_report(bot, _artifact(tmp_path, {"pr": victim, "head_sha": victim_sha},
                               _plan_failed("experiments/exp041_victim.py")), REPO, _event(tmp_path, victim_sha, []))
    [check], comments = _posted(d, victim)
    assert check["head_sha"] == victim_sha and "the experiment file raised" in comments[-1]


def test_oversized_or_odd_artifacts_are_refused(tmp_path: Path, sandbox: tuple[str, SandboxState]) -> None:
    d, bot, prs = _setup(tmp_path, sandbox[0])
    pr, sha = prs["attacker"]
    path = "experiments/exp042_attacker.py"
    bad = [
        ({**_plan_failed(path), "1.err": b"x" * (MAX_FILE_BYTES + 1)}, "over its size bounds"),
        ({f"{i}.err": b"x" * (MAX_FILE_BYTES // 2) for i in range(20)}, "over its size bounds"),
        ({**_plan_failed(path), "run.sh": "x"}, "unexpected file 'run.sh'"),
    ]
    for files, message in bad:
        with pytest.raises(ArtifactRefused, match=message):
            plan_report(bot, _artifact(tmp_path, {"pr": pr, "head_sha": sha}, files), REPO,
                        _event(tmp_path, sha, [pr]))
    link = _artifact(tmp_path, {"pr": pr, "head_sha": sha}, {"1.file": path})
    os.symlink("/etc/passwd", link / "1.err")
    (link / "1.rc").write_text("1")
    with pytest.raises(ArtifactRefused, match="not a plain file"):
        plan_report(bot, link, REPO, _event(tmp_path, sha, [pr]))
    checks, comments = _posted(d, pr)
    assert checks and all(c["conclusion"] == "failure" for c in checks)
    assert "root:" not in "".join(comments) and "xxxx" not in "".join(comments)
    # without the event, nothing is trusted at all
    with pytest.raises(ConfigError, match="GITHUB_EVENT_PATH is not set"):
        plan_report(bot, link, REPO, None)
    with pytest.raises(ConfigError, match="not a workflow_run event"):
        plan_report(bot, link, REPO, _write(tmp_path / "bad-event.json", {"workflow_run": {"head_sha": "HEAD"}}))


def _write(path: Path, data: dict) -> str:
    path.write_text(json.dumps(data))
    return str(path)
