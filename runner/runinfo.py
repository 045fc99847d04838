"""Provenance facts for results.json: git state of the code, package versions, devices, run ids."""

from __future__ import annotations

import json
import socket
import sys
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import jax

from runner import gitinfo
from runner.config import RunConfig

_PACKAGES = ("openlab", "jax", "jaxlib", "flax", "optax", "numpy", "tensorstore", "tokenizers", "wandb")
_REPO = Path(__file__).resolve().parents[1]


def git_state(repo: Path = _REPO) -> tuple[str | None, bool | None, str | None]:
    """(HEAD sha, dirty flag over tracked files, origin url) of the code that runs; Nones outside git."""
    g = gitinfo.git_state(repo)
    return g.commit, g.dirty, g.remote


def versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for name in _PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


def devices() -> list[str]:
    return [f"{d.platform}:{d.device_kind}" for d in jax.devices()]


def host() -> str:
    return socket.gethostname()


def now() -> datetime:
    return datetime.now(UTC)


def resolve_run_id(out: Path, cfg: RunConfig, run_id: str | None) -> str:
    """The caller's id, else the id an earlier attempt in ``out`` recorded, else a fresh one (then recorded)."""
    marker = out / ".openlab-run.json"
    if run_id is None and marker.exists():
        try:
            run_id = json.loads(marker.read_text())["run_id"]
        except (ValueError, KeyError, OSError):
            run_id = None
    if run_id is None:
        run_id = f"{cfg.name}-{now().strftime('%Y%m%d-%H%M%S')}-{cfg.fingerprint()[:6]}"
    marker.write_text(json.dumps({"run_id": run_id}))
    return run_id
