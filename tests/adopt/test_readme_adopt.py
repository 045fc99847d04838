"""The README's "Adopt openlab in your lab" commands, run as written in a fresh git repository (the cheap ones:
`openlab init` and the example experiment's `openlab plan`); the others are parsed by tests/test_readme.py and
run by their own tests (app create: test_app_create.py, doctor: test_doctor.py); `openlab run` of the example
runs here too, capped at 3 training steps."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OPENLAB = str(Path(sys.executable).parent / "openlab")


def section_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    body = text.split("## Adopt openlab in your lab\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", body, re.S).group(1)  # type: ignore[union-attr]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_every_openlab_command_of_the_section_has_a_test() -> None:
    cmds = [c for c in section_commands() if c.startswith("openlab ")]
    names = {shlex.split(c)[1] for c in cmds}
    assert names == {"init", "plan", "run", "app", "doctor"}, names


def test_init_then_plan_as_the_readme_says(tmp_path: Path) -> None:
    lab = tmp_path / "your-lab"
    lab.mkdir()
    subprocess.run(["git", "init", "-q", str(lab)], check=True)
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}  # where init puts the private key
    for cmd in section_commands():
        if not cmd.startswith(("openlab init", "openlab plan")):
            continue
        proc = subprocess.run([OPENLAB, *shlex.split(cmd)[1:]], cwd=lab, env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, f"{cmd}: {proc.stderr[-2000:]}"
        if cmd.startswith("openlab plan"):
            assert [s["kind"] for s in json.loads(proc.stdout)["steps"]].count("train") == 2
    assert (tmp_path / "config/openlab/your-lab-signing-key.pem").is_file()


@pytest.mark.slow
@pytest.mark.ray
def test_run_as_the_readme_says(tmp_path: Path) -> None:
    """`openlab run` of the example in the init-ed lab, on the embedded Ray, with training capped at 3 steps."""
    lab = tmp_path / "your-lab"
    lab.mkdir()
    subprocess.run(["git", "init", "-q", str(lab)], check=True)
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "OPENLAB_MAX_TRAIN_STEPS": "3",
           "WANDB_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    cmds = [c for c in section_commands() if c.startswith(("openlab init", "openlab run"))]
    assert [shlex.split(c)[1] for c in cmds] == ["init", "run"]
    for cmd in cmds:
        proc = subprocess.run([OPENLAB, *shlex.split(cmd)[1:]], cwd=lab, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, f"{cmd}: {proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert list(lab.rglob("exp0/eval_lr0.001/*/*")), "the eval step wrote nothing"
