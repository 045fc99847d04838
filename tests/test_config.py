"""Config loading: unknown keys and impossible values name the field; YAML errors name the line."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.cli import main
from runner.config import load_config
from runner.errors import ConfigError

GOOD = """\
model: {hidden_dim: 64, intermediate_dim: 128, num_layers: 2, num_heads: 4, num_kv_heads: 2, seq_len: 32, vocab_size: 260}
train: {batch_size: 4, steps: 10}
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


def test_good_config_loads(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, GOOD))
    assert cfg.model.head_dim == 16
    assert cfg.fingerprint() == load_config(write(tmp_path, GOOD)).fingerprint()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (GOOD.replace("num_heads: 4", "num_heads: 3"), "model.num_heads: 3 does not divide hidden_dim 64"),
        (GOOD.replace("steps: 10", "steps: 0"), "train.steps"),
        (GOOD + "bogus: 1\n", "bogus: unknown key"),
        (GOOD.replace("seq_len: 32", "seq_len: 32, colour: red"), "model.colour: unknown key"),
        (GOOD.replace("num_kv_heads: 2", "num_kv_heads: 3"), "model.num_kv_heads"),
        ("model: [1, 2\n", "malformed YAML at line"),
        ("- a\n- b\n", "expected a mapping"),
    ],
)
def test_bad_config_names_the_field(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=None) as info:
        load_config(write(tmp_path, text))
    assert needle in str(info.value)


def test_cli_reports_one_line_and_exit_2(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD.replace("num_heads: 4", "num_heads: 3"))
    res = CliRunner().invoke(main, ["flops", str(p)])
    assert res.exit_code == 2
    assert res.output.strip().startswith("error: ")
    assert "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_missing_config_file(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["flops", str(tmp_path / "nope.yaml")])
    assert res.exit_code == 2
    assert "no such config file" in res.output
