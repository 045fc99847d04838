"""Actions mode helpers: post the plan produced by the unprivileged `openlab plan` workflow.

The artifact folder holds `meta.json` (`pr`, `head_sha`) and, per planned file i, `i.file` (path), `i.json`
(stdout of `openlab plan`), `i.err` (stderr) and `i.rc` (exit status when non-zero). It is untrusted data: the
JSON is validated against `runner.schema.Plan`, nothing in it is executed.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ValidationError

from bot.handlers.plan_report import plan_actions
from bot.handlers.pulls import prereg_statuses, pull_info
from bot.plan_sandbox import PlanOutcome, _last_error
from bot.service import Bot
from runner.errors import OpenlabError
from runner.schema import Plan


class PlanMeta(BaseModel):
    pr: int
    head_sha: str


def read_outcomes(folder: Path) -> tuple[PlanMeta, dict[str, PlanOutcome]]:
    try:
        meta = PlanMeta.model_validate_json((folder / "meta.json").read_text())
    except (OSError, ValidationError) as err:
        raise OpenlabError(f"{folder}/meta.json: {err}") from None
    out: dict[str, PlanOutcome] = {}
    for f in sorted(folder.glob("*.file")):
        path = f.read_text().strip()
        rc_file, js, err = f.with_suffix(".rc"), f.with_suffix(".json"), f.with_suffix(".err")
        if rc_file.exists():
            rc = int(rc_file.read_text().strip() or 1)
            stderr = err.read_text(errors="replace") if err.exists() else ""
            msg = "timed out" if rc == 124 else _last_error(stderr, rc)
            out[path] = PlanOutcome(path, error=msg)
            continue
        try:
            out[path] = PlanOutcome(path, plan=Plan.model_validate_json(js.read_bytes()))
        except (OSError, ValidationError) as e:
            out[path] = PlanOutcome(path, error=f"plan output is not a valid Plan: {str(e).splitlines()[0]}")
    return meta, out


def plan_report(bot: Bot, folder: Path, repo: str) -> None:
    if not repo:
        raise OpenlabError("GITHUB_REPOSITORY is not set")
    meta, outcomes = read_outcomes(folder)
    env, executor = bot.env_for(None)
    from bot.handlers import load_repo_config

    config, _ = load_repo_config(env, repo)
    pull = pull_info(env, repo, env.gh.get_pull(repo, meta.pr), config)
    if pull.head_sha != meta.head_sha:
        print(json.dumps({"skipped": f"plan is for {meta.head_sha[:7]}, PR head is now {pull.head_sha[:7]}"}))
        return
    prereg = prereg_statuses(env, repo, [e.issue for e in pull.experiments], config)
    flops = {n: (env.view.preregistration(repo, n) or {}).get("planned_flops") for n in prereg}
    for action in plan_actions(repo, pull.number, pull.head_sha, pull.experiments, outcomes, prereg, flops, config):
        executor.apply(action)
