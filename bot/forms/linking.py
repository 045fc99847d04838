"""Link a PR's experiment files to their preregistration issues and check their names.

- ``experiments/exp<N>_<slug>.py`` belongs to issue N (the number in the name wins);
- ``experiments/speedrun/<name>/<name>.py`` belongs to the issue named by ``Preregistration: #N`` in the PR body;
- any other ``.py`` under ``experiments/`` is a naming problem; removed files are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_EXP = re.compile(r"^exp(\d+)_[a-z0-9_]+\.py$")
_SPEEDRUN = re.compile(r"^speedrun/([a-z0-9_-]+)/\1\.py$")
_PREREG = re.compile(r"(?im)^\s*preregistration:\s*#(\d+)\b")


@dataclass(frozen=True)
class ExperimentFile:
    path: str
    issue: int | None
    problems: tuple[str, ...] = field(default=())


def body_preregistration(body: str | None) -> int | None:
    m = _PREREG.search(body or "")
    return int(m.group(1)) if m else None


def link(files: list[dict], body: str | None, experiments_dir: str) -> list[ExperimentFile]:
    prefix = experiments_dir.rstrip("/") + "/"
    from_body = body_preregistration(body)
    out = []
    for f in files:
        path = str(f.get("filename", ""))
        if f.get("status") == "removed" or not path.startswith(prefix) or not path.endswith(".py"):
            continue
        rel = path[len(prefix):]
        if rel.endswith("__init__.py") or rel.split("/")[-1].startswith("_"):
            continue  # helper modules are allowed next to experiments
        if m := _EXP.match(rel):
            out.append(ExperimentFile(path, int(m.group(1))))
        elif _SPEEDRUN.match(rel):
            problems = () if from_body else ("add `Preregistration: #N` to the PR body to link this speedrun",)
            out.append(ExperimentFile(path, from_body, problems))
        else:
            out.append(ExperimentFile(path, from_body, (
                f"name it `{prefix}exp<N>_<slug>.py` (N = preregistration issue, slug = lowercase words joined by _)"
                f" or `{prefix}speedrun/<name>/<name>.py`",)))
    return out
