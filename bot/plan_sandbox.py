"""Run `openlab plan FILE` on a PR's code without letting that code near the bot.

The bot never imports PR code. The plan runs in a child process with:
- an empty environment apart from PATH/LANG/HOME/TMPDIR and offline switches (no token, no secret, no proxy);
- its own temporary directory as cwd, HOME and TMPDIR, deleted afterwards;
- rlimits: CPU seconds, address space, file size, no core dumps; a wall-clock timeout that kills its process group;
- no network when the platform allows it: ``unshare -rn`` (a user + network namespace with only loopback), else
  ``unshare -n`` (root); where neither works (e.g. some containers, macOS) the plan runs with network and the
  outcome says so (`network_isolated` False) so operators can see it.
"""

from __future__ import annotations

import functools
import os
import resource
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from runner.schema import Plan


@dataclass(frozen=True)
class PlanOutcome:
    path: str
    plan: Plan | None = None
    error: str | None = None
    network_isolated: bool = False


@functools.cache
def network_prefix() -> tuple[str, ...]:
    for prefix in (("unshare", "-rn"), ("unshare", "-n")):
        try:
            if subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0:
                return prefix
        except (OSError, subprocess.TimeoutExpired):
            continue
    return ()


def _limits(cpu_s: int, memory_mb: int) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_plan(workdir: Path, rel_path: str, *, timeout_s: float = 120.0, memory_mb: int = 4096) -> PlanOutcome:
    """Plan `rel_path` inside `workdir` (a checkout of the PR at its head SHA)."""
    prefix = network_prefix()
    with tempfile.TemporaryDirectory(prefix="openlab-plan-") as tmp:
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": tmp, "TMPDIR": tmp,
               "JAX_PLATFORMS": "cpu", "WANDB_MODE": "disabled", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "PYTHONDONTWRITEBYTECODE": "1", "NO_PROXY": "*"}
        # -I: the interpreter ignores PYTHON* variables and does not put the PR's cwd first on sys.path, so a PR
        # cannot shadow the installed `runner` package that loads its file.
        cmd = [*prefix, sys.executable, "-I", "-m", "runner.cli", "plan", rel_path]
        try:
            proc = subprocess.Popen(
                cmd, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                start_new_session=True, preexec_fn=functools.partial(_limits, int(timeout_s) + 1, memory_mb),
            )
        except OSError as err:
            return PlanOutcome(rel_path, error=f"could not start the plan: {err.strerror}")
        try:
            out, err_b = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return PlanOutcome(rel_path, error=f"timed out after {timeout_s:.0f}s", network_isolated=bool(prefix))
    isolated = bool(prefix)
    if proc.returncode != 0:
        return PlanOutcome(rel_path, error=_last_error(err_b.decode(errors="replace"), proc.returncode),
                           network_isolated=isolated)
    try:
        return PlanOutcome(rel_path, plan=Plan.model_validate_json(out), network_isolated=isolated)
    except ValidationError as err:
        return PlanOutcome(rel_path, error=f"plan output is not a valid Plan: {err.errors()[0]['msg']}",
                           network_isolated=isolated)


def _last_error(stderr: str, rc: int) -> str:
    if rc < 0:
        name = signal.Signals(-rc).name
        return {"SIGXCPU": "CPU time limit exceeded", "SIGKILL": "killed (memory or time limit)"}.get(name, name)
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error:")]
    return (errors[-1] if errors else (lines[-1] if lines else f"exit status {rc}"))[:500]


def materialise(files: dict[str, str], root: Path) -> Path:
    """Write {repo path: text} under root, refusing paths that escape it (PR file names are untrusted)."""
    root = root.resolve()
    for rel, text in files.items():
        target = (root / rel).resolve()
        if not target.is_relative_to(root):
            raise ValueError(f"refusing path outside the checkout: {rel!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root
