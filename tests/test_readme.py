"""The README as a guide that cannot drift: its commands parse against the real CLI (and the cheap ones run), its
configuration table is what the settings models generate, and every variable the code reads is declared.

The long commands are exercised in reduced form by their own tests: `make demo` by tests/demo (20 steps),
`openlab train` of the tiny config by tests/runner/test_train.py, `openlab run` and `submit/status/cancel` on real
Ray by tests/runner/executor, `leaderboard build|serve` by tests/leaderboard, `reports build` and `browse` by
tests/reports and tests/browse.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

from bot.config.reference import END, START, env_rows, render
from runner.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
OPENLAB = str(Path(sys.executable).parent / "openlab")


def readme_commands() -> list[str]:
    cmds = []
    for block in re.findall(r"```bash\n(.*?)```", README, re.S):
        for line in block.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line.startswith((".venv/bin/openlab ", "openlab ", "make ")):
                cmds.append(line)
    return cmds


def test_readme_has_the_two_commands_first() -> None:
    first = readme_commands()[:2]
    assert first == ["make test", "make demo"]
    makefile = (ROOT / "Makefile").read_text()
    for target in ("test", "demo"):
        assert re.search(rf"^{target}:", makefile, re.M)


@pytest.mark.parametrize("cmd", [c for c in readme_commands() if not c.startswith("make ")])
def test_readme_command_parses_against_the_cli(cmd: str) -> None:
    """Every `openlab ...` line of the README names real subcommands and options, with valid values."""
    args = shlex.split(cmd.replace("[--logs]", "--logs"))[1:]
    ctx = main.make_context("openlab", list(args), resilient_parsing=False)
    group: click.Command = main
    while isinstance(group, click.Group) and ctx.protected_args:
        name, *rest = [*ctx.protected_args, *ctx.args]
        sub = group.get_command(ctx, name)
        assert sub is not None, f"{cmd}: no command {name!r}"
        ctx = sub.make_context(name, rest, parent=ctx)
        group = sub


@pytest.mark.parametrize(
    "cmd",
    [
        ".venv/bin/openlab flops experiments/speedrun/tiny_cpu/config.yaml",
        ".venv/bin/openlab plan experiments/exp1_fasttext_filter.py",
    ],
)
def test_cheap_readme_commands_run(cmd: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cmd in readme_commands()
    monkeypatch.setenv("OPENLAB_STORAGE_PREFIX", str(tmp_path / "steps"))
    proc = subprocess.run(
        [OPENLAB, *shlex.split(cmd)[1:]], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)


def test_configuration_reference_is_current() -> None:
    current = README[README.index(START) : README.index(END) + len(END)]
    assert current == render(), (
        "README's configuration reference is stale: run `openlab config-reference --write`"
    )


# Variables the code sets for Ray's own processes or the OS provides; not lab configuration.
NOT_CONFIGURATION = {
    "PATH",
    "GITHUB_ACTIONS",  # set by GitHub on its runners: picks `openlab doctor`'s default mode
    "XDG_CONFIG_HOME",  # where `openlab init` and `app create` put secrets outside the repository
    "HOME",
    "USER",
    "RAY_USAGE_STATS_ENABLED",
    "RAY_AUTH_MODE",
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER",
    "XLA_FLAGS",
    "JAX_PLATFORMS",
    "TOKENIZERS_PARALLELISM",
    "WANDB_SILENT",
    "WANDB_DIR",
    "PYTHONPATH",
}
READ = re.compile(r"""(?:environ\.get\(|environ\[|getenv\(|envvar=)\s*["']([A-Z][A-Z0-9_]+)["']""")


def test_every_variable_the_code_reads_is_declared() -> None:
    declared = {row[0] for row in env_rows()}
    read: dict[str, str] = {}
    for pkg in ("bot", "runner", "leaderboard"):
        for path in (ROOT / pkg).rglob("*.py"):
            for name in READ.findall(path.read_text()):
                read.setdefault(name, str(path.relative_to(ROOT)))
    missing = {n: where for n, where in read.items() if n not in declared and n not in NOT_CONFIGURATION}
    assert missing == {}, f"declare these in runner/settings.py or bot settings: {missing}"
