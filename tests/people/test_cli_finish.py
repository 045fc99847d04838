"""The `openlab` command as a person meets it: grouped help, honest help texts, typos answered, a summary line."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import yaml
from click.testing import CliRunner

from runner.cli import main
from tests.runner.conftest import TINY


def test_help_groups_commands_for_researchers_and_operators() -> None:
    out = CliRunner().invoke(main, ["--help"]).output
    research, operators = out.index("For researchers:"), out.index("For operators")
    assert research < out.index("  train ") < out.index("  leaderboard ") < operators < out.index("  serve ")
    assert "Commands:" not in out and "..." not in out[research:]  # every command placed, sentences whole


def test_status_help_promises_no_embedded_ray() -> None:
    for cmd in ("status", "cancel", "submit"):
        text = " ".join(CliRunner().invoke(main, [cmd, "--help"]).output.split())
        assert "embedded" not in text and "http://127.0.0.1:8265" in text and "nothing is started" in text
    assert "embedded local Ray" in " ".join(CliRunner().invoke(main, ["run", "--help"]).output.split())


def test_unknown_command_and_config_key_suggest_the_nearest() -> None:
    res = CliRunner().invoke(main, ["trian", "x.yaml"])
    assert res.exit_code == 2 and "did you mean `openlab train`?" in res.output and "Traceback" not in res.output


def test_config_typo_names_the_known_key(tmp_path: Path) -> None:
    cfg = copy.deepcopy(TINY)
    cfg["model"]["hiden_dim"] = cfg["model"].pop("hidden_dim")
    cfg["optimizer"]["learning_rat"] = 1e-3
    p = tmp_path / "typo.yaml"
    p.write_text(yaml.safe_dump(cfg))
    res = CliRunner().invoke(main, ["flops", str(p)])
    assert res.exit_code == 2
    assert "model.hiden_dim: unknown key (did you mean `hidden_dim`?)" in res.output
    assert "optimizer.learning_rat: unknown key (did you mean `learning_rate`?)" in res.output


def test_train_ends_with_one_summary_line(tmp_path: Path) -> None:
    cfg = copy.deepcopy(TINY)
    cfg["train"].update(steps=3, log_every=1)
    cfg["tracking"] = {"mode": "disabled"}
    p = tmp_path / "tiny.yaml"
    p.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["train", str(p), "--out", str(out)])
    assert res.exit_code == 0, res.output
    last = res.stdout.strip().splitlines()[-1]
    results = json.loads((out / "results.json").read_text())
    m = re.fullmatch(r"done: t · BPB (\S+) on val · ([\d,]+) tokens · (\S+) model FLOPs · ([\d.]+) s training "
                     r"\(([\d.]+) s wall\) · results: (.+)", last)
    assert m, last
    assert float(m[1]) == round(results["bpb"], 4) and int(m[2].replace(",", "")) == results["tokens"]
    assert Path(m[6]) == out / "results.json" and float(m[5]) >= float(m[4])
