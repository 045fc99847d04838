"""Run a GitHub Actions workflow's `run:` steps locally, the way the runner would, against the sandbox.

What GitHub provides is provided: `GITHUB_EVENT_NAME`, `GITHUB_EVENT_PATH` (a payload recorded from the sandbox),
`GITHUB_REPOSITORY`, `GITHUB_API_URL`, `GITHUB_RUN_ID`, the step's `env:` with `${{ github.event.* }}`,
`${{ github.* }}` and `${{ secrets.* }}` expressions evaluated, `bash -e` as the shell, the job's working
directory. `uses:` steps (checkout, setup-python, artifacts) are GitHub's own actions and are stood in for by the
test (the working directory is the checkout; the artifact folder is passed between jobs), and `pip install .`
is skipped because the test already runs inside the installed package.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

WORKFLOWS = Path(__file__).resolve().parents[2] / ".github" / "workflows"
_EXPR = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")
SKIPPED = ("python -m pip install", "make test")


@dataclass
class StepResult:
    name: str
    command: str
    returncode: int
    stdout: str
    stderr: str


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def _lookup(expr: str, ctx: dict[str, Any]) -> str:
    for alt in expr.split("||"):
        node: Any = ctx
        for part in alt.strip().split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node not in (None, ""):
            return str(node)
    return ""


def evaluate(text: str, ctx: dict[str, Any]) -> str:
    return _EXPR.sub(lambda m: _lookup(m.group(1), ctx), text)


def run_steps(workflow: str, job: str, *, event_name: str, payload_path: Path | None, cwd: Path,
              secrets: dict[str, str], env: dict[str, str], payload: dict[str, Any] | None = None,
              timeout: float = 300) -> list[StepResult]:
    """Execute every `run:` step of ``job`` in order; stop at the first failure (as a job does)."""
    spec = load(workflow)
    ctx = {"github": {"event": payload or {}, "event_name": event_name, "repository": env.get("GITHUB_REPOSITORY")},
           "secrets": secrets}
    base = {**os.environ, **env, "GITHUB_EVENT_NAME": event_name, "CI": "true", "GITHUB_ACTIONS": "true",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    if payload_path is not None:
        base["GITHUB_EVENT_PATH"] = str(payload_path)
    out: list[StepResult] = []
    for step in spec["jobs"][job]["steps"]:
        command = step.get("run")
        if command is None or any(command.strip().startswith(s) for s in SKIPPED):
            continue
        step_env = {k: evaluate(str(v), ctx) for k, v in (step.get("env") or {}).items()}
        proc = subprocess.run(["bash", "-e", "-c", evaluate(command, ctx)], cwd=cwd, env={**base, **step_env},
                              capture_output=True, text=True, timeout=timeout)
        out.append(StepResult(step.get("name", command[:40]), command, proc.returncode, proc.stdout, proc.stderr))
        if proc.returncode != 0:
            break
    return out
