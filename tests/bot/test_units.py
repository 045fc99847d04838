"""Pure pieces: command parsing, form parsing and validation, escaping, trust, repo config, run ids."""

from __future__ import annotations

import pytest

from bot.actions import ACTIONS, DispatchRun, run_id
from bot.commands import REGISTRY
from bot.commands.parse import find_commands
from bot.config.repo_config import RepoConfig, parse_repo_config
from bot.config.settings import BotSettings
from bot.config.trust import decide_trust
from bot.forms.issue_forms import bundled_form, parse_body
from bot.forms.linking import link
from bot.forms.preregistration import check, parse_flops
from bot.github.escape import untrusted
from bot.github.render import render_comment
from runner.errors import ConfigError
from tests.bot.helpers import experiment_body

KNOWN = set(REGISTRY)


def test_commands_are_line_anchored_and_skip_code_and_quotes() -> None:
    body = ("/run exp007\nplease /run this\n> /cancel\n```\n/rerun\n```\n~~~\n/help\n~~~\n\n    /status\n"
            "/unknown\n  /status\n/run exp007\n/foo/bar")
    cmds, skipped = find_commands(body, KNOWN)
    assert [(c.name, c.args) for c in cmds] == [("run", ("exp007",)), ("status", ())]
    assert skipped == 0


def test_command_cap() -> None:
    cmds, skipped = find_commands("\n".join(f"/run e{i}" for i in range(200)), KNOWN)
    assert len(cmds) == 10 and skipped == 190


def test_form_parse_and_validate() -> None:
    form = bundled_form("experiment")
    values, missing = parse_body(form, experiment_body(flops="1,000,000 FLOPs"))
    assert missing == [] and values["baseline"] is None and values["flops"] == "1,000,000 FLOPs"
    checked = check(form, values, missing, RepoConfig())
    assert checked.ok and checked.planned_flops == 1e6 and checked.track == "budget_1e17"
    checked = check(form, *parse_body(form, experiment_body(track="budget_1e15", flops="1e16")), RepoConfig())
    assert not checked.ok and "allows at most" in checked.problems[0]


@pytest.mark.parametrize("text,value", [("3e18", 3e18), ("3.5E+18 flops", 3.5e18), ("1_000", 1000.0),
                                        ("many", None), ("", None), ("-1", None)])
def test_parse_flops(text: str, value: float | None) -> None:
    assert parse_flops(text) == value


def test_untrusted_text_cannot_ping_reference_or_hide() -> None:
    s = untrusted("hi @octocat see #12 <!-- openlab:plan:1 --> <img src=x> a@b.c")
    assert "@octocat" not in s and "@\u200boctocat" in s and "#\u200b12" in s
    assert "<" not in s and "a@b.c" in s


def test_rendered_comment_escapes_values_and_has_one_marker() -> None:
    body = render_comment("reply", "9", results=[{"command": "run", "ok": False, "message": "<!-- openlab:x:y --> @a",
                                                  "detail": None}])
    assert body.startswith("<!-- openlab:reply:9 -->") and body.count("<!--") == 1 and "@\u200ba" in body


def test_trust() -> None:
    cfg = RepoConfig(approvers=["Friend"])
    assert decide_trust("friend", "read", cfg)[0]
    assert decide_trust("m", "maintain", cfg)[0] and decide_trust("w", "write", cfg)[0]
    ok, reason = decide_trust("t", "triage", cfg)
    assert not ok and "`triage`" in reason


def test_repo_config_errors_name_the_field() -> None:
    assert parse_repo_config(None) == RepoConfig()
    with pytest.raises(ConfigError, match=r"openlab.yml: budgets.max_flops_per_run"):
        parse_repo_config("budgets:\n  max_flops_per_run: -1\n")
    with pytest.raises(ConfigError, match=r"line 2"):
        parse_repo_config("a: 1\n  b: [\n")
    with pytest.raises(ConfigError, match="unknown key"):
        parse_repo_config("approval_lable: x\n")


def test_linking_rules() -> None:
    files = [{"filename": "experiments/exp012_a_b.py", "status": "added"},
             {"filename": "experiments/speedrun/fast/fast.py", "status": "added"},
             {"filename": "experiments/old.py", "status": "removed"},
             {"filename": "experiments/_util.py", "status": "added"},
             {"filename": "README.md", "status": "modified"}]
    linked = link(files, "Preregistration: #4", "experiments")
    assert [(e.path, e.issue, bool(e.problems)) for e in linked] == [
        ("experiments/exp012_a_b.py", 12, False), ("experiments/speedrun/fast/fast.py", 4, False)]


def test_run_id_is_pure_and_actions_round_trip() -> None:
    a = run_id("o/r", 1, "abc", "experiments/exp001_x.py", 1)
    assert a == run_id("o/r", 1, "abc", "experiments/exp001_x.py", 1) != run_id("o/r", 1, "abc", "experiments/exp001_x.py", 2)
    act = DispatchRun(repo="o/r", run_id=a, pr=1, sha="abc", experiment="e.py", requested_by="m")
    assert ACTIONS.validate_python([act.model_dump()]) == [act]


def test_settings_refuse_weak_or_missing_secrets() -> None:
    with pytest.raises(ConfigError, match="not set"):
        BotSettings(webhook_secrets=[]).require_secrets()
    with pytest.raises(ConfigError, match="default or short"):
        BotSettings(webhook_secrets=["development"]).require_secrets()
    assert BotSettings(webhook_secrets="aaaaaaaa1, bbbbbbbb2").require_secrets() == [b"aaaaaaaa1", b"bbbbbbbb2"]


def test_app_manifest_is_minimal() -> None:
    import yaml

    from tests.bot.helpers import ROOT

    manifest = yaml.safe_load((ROOT / "app.yml").read_text())
    assert set(manifest["default_events"]) == {"issues", "issue_comment", "pull_request", "check_run", "check_suite"}
    assert manifest["default_permissions"] == {"metadata": "read", "issues": "write", "pull_requests": "write",
                                               "checks": "write", "contents": "write"}


def test_pull_request_target_is_read_as_pull_request() -> None:
    from bot.github.events import PullRequestEvent, handles, parse_event
    from tests.bot import github_spec as gs

    gs.require_specs()
    example = next(e for e in gs.examples()["pull_request"] if e["action"] == "synchronize")
    assert isinstance(parse_event("pull_request_target", example), PullRequestEvent)
    assert handles("pull_request_target", "synchronize") and not handles("pull_request_target", "assigned")
