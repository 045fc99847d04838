"""Depth-bounded parsing of untrusted YAML/JSON (runner.safeparse): openlab.yml, run configs, event payloads.

Each deep document gets one line naming its file, never a RecursionError traceback, and a deep openlab.yml is
reported on the thread while the bot goes on with the defaults (it used to make every delivery fail silently).
"""

# ruff: noqa: F811 - pytest fixtures imported from tests.bot.conftest are test parameters by design
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config.repo_config import parse_repo_config
from runner.config import load_config
from runner.errors import ConfigError
from runner.safeparse import MAX_DEPTH, DepthError, ParseError, loads_json, loads_yaml
from runner.schema import ResultsError, loads_results
from tests.bot.conftest import Lab, app_key, lab, sandbox  # noqa: F401 - fixtures
from tests.bot.helpers import REPO, bot_comments, experiment_body, repo_files


def _deep_yaml(n: int) -> str:
    return "model:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(n)) + "  " * (n + 1) + "x: 1\n"


def test_bounds_and_messages() -> None:
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads_json(ok, "a.json") is not None and loads_yaml(ok, "a.yml") is not None
    for n in (MAX_DEPTH + 1, 5000, 200_000):
        with pytest.raises(DepthError, match=r"^a\.json: nested deeper than 64 levels"):
            loads_json("[" * n + "]" * n, "a.json")
        with pytest.raises(DepthError, match=r"^a\.yml: nested deeper than 64 levels \(line 1\)"):
            loads_yaml("[" * n + "]" * n, "a.yml")
    with pytest.raises(DepthError, match=r"\(line 65\)"):  # block style: the line where the bound is crossed
        loads_yaml(_deep_yaml(200), "b.yml")
    # aliases reach depth without nesting in the text, and can even make a cycle
    chain = "a0: &a0 [1]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 100))
    with pytest.raises(DepthError):
        loads_yaml(chain, "c.yml")
    with pytest.raises(DepthError):
        loads_yaml("&a [*a]", "d.yml")
    # a "billion laughs" of shared aliases is shallow and measured once per node, not expanded
    laughs = "l0: &l0 [" + ",".join(["x"] * 9) + "]\n" + "".join(
        f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 10))
    assert len(loads_yaml(laughs, "e.yml")) == 10
    with pytest.raises(ParseError, match=r"^f\.yml: malformed YAML at line 2"):
        loads_yaml("a: [", "f.yml")
    with pytest.raises(ParseError, match=r"^g\.json: not valid JSON at line 1, column 2"):
        loads_json("{x", "g.json")


def test_deep_results_json_is_a_results_error() -> None:
    with pytest.raises(ResultsError, match=r"^experiments/x/results\.json: nested deeper than 64 levels"):
        loads_results('{"metrics": ' + "[" * 5000 + "]" * 5000 + "}", "experiments/x/results.json")


def test_deep_openlab_yml_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"^\.github/openlab\.yml: nested deeper than 64 levels"):
        parse_repo_config("tracks:\n  - " + "[" * 3000 + "]" * 3000)


def test_deep_run_config_is_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "deep.yaml"
    cfg.write_text(_deep_yaml(5000))
    with pytest.raises(ConfigError, match=f"^{cfg}: nested deeper than 64 levels"):
        load_config(cfg)
    payload = tmp_path / "event.json"
    payload.write_text('{"a": ' * 5000 + "1" + "}" * 5000)
    env = {**os.environ, "GITHUB_TOKEN": "unused", "OPENLAB_LEDGER_URL": f"sqlite:///{tmp_path}/l.sqlite3",
           "OPENLAB_GITHUB_API_URL": "http://127.0.0.1:9"}
    r = subprocess.run([sys.executable, "-m", "runner.cli", "event", "issues", str(payload)], env=env,
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr == f"error: {payload}: nested deeper than 64 levels; refusing to parse it\n"


def test_deep_openlab_yml_is_reported_on_the_thread(lab: Lab) -> None:
    d = lab.driver
    d.setup_repo(REPO, {**repo_files(), ".github/openlab.yml": "tracks:\n  - " + "[" * 3000 + "]" * 3000},
                 roles={"maintainer": "write"})
    n = d.open_issue(REPO, "alice", "[Experiment]: deep config", experiment_body(), labels=["experiment"])
    lab.settle()
    [c] = bot_comments(d.thread(REPO, n))
    assert ".github/openlab.yml: nested deeper than 64 levels" in c["body"] and "defaults used" in c["body"]
    statuses = [lab.bot.ledger.delivery_status(g)["status"] for g in d.sent]
    assert statuses and all(s == "done" for s in statuses), statuses
