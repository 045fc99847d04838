"""Actions mode: post the plan produced by the unprivileged `openlab plan` workflow (`openlab event plan_report`).

Trust comes from the `workflow_run` event only (``GITHUB_EVENT_PATH``, written by GitHub): its ``head_sha`` and
``pull_requests[]`` say which PR and commit the plan job ran for. The artifact folder was written by a job that
ran the PR's own code, so it is untrusted data, bounded in size and shape:

- ``meta.json`` (``pr``, ``head_sha``) is at most a hint. A PR it names must be one of the event's
  ``pull_requests`` (or, when GitHub leaves that list empty, as it does for PRs from forks, a PR whose head on
  GitHub is the event's SHA from the event's head repository), and its SHA must be the event's: anything else
  is refused and nothing is posted for the PR it names.
- per planned file i: ``i.file`` (path), ``i.json`` (stdout of `openlab plan`), ``i.err`` (stderr), ``i.rc`` (exit
  status when non-zero). Only names of that shape are read, no links, at most ``MAX_FILES`` files of at most
  ``MAX_FILE_BYTES`` and ``MAX_TOTAL_BYTES`` in all; the JSON is validated against `runner.schema.Plan` and
  outcomes count only for experiment files the PR really changes (from the GitHub API). An artifact over the
  bounds is refused as a whole and the plan check of the event's PR says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.handlers.pulls import prereg_statuses, pull_info
from bot.ingress.service import Bot
from bot.plans.report import plan_actions
from bot.plans.sandbox import PlanOutcome, _last_error
from runner.errors import ConfigError, OpenlabError
from runner.safeparse import loads_json
from runner.schema import Plan

MAX_FILES = 200
MAX_FILE_BYTES = 1024 * 1024
MAX_TOTAL_BYTES = 8 * 1024 * 1024
MAX_EVENT_BYTES = 25 * 1024 * 1024
_NAME = re.compile(r"^(meta\.json|files\.txt|[0-9]{1,4}\.(file|json|err|rc))$")


class ArtifactRefused(OpenlabError):
    """The plan artifact is not usable (too big, odd files, or naming another PR/SHA)."""


class PlanMeta(BaseModel):
    pr: int | None = None
    head_sha: str | None = Field(None, max_length=64)


class _PR(BaseModel):
    number: int


class _Repo(BaseModel):
    full_name: str


class WorkflowRun(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: int | None = None
    head_sha: str = Field(pattern=r"^[0-9a-f]{40}$")
    event: str | None = None
    pull_requests: list[_PR] = Field(default_factory=list)
    head_repository: _Repo | None = None


class WorkflowRunEvent(BaseModel):
    model_config = ConfigDict(extra="ignore")

    workflow_run: WorkflowRun


def read_event(path: str | None) -> WorkflowRun:
    """The `workflow_run` of the event file GitHub wrote (`GITHUB_EVENT_PATH`), or a one-line error."""
    if not path:
        raise ConfigError("GITHUB_EVENT_PATH is not set: plan_report runs in a workflow_run job")
    p = Path(path)
    try:
        if p.stat().st_size > MAX_EVENT_BYTES:
            raise ConfigError(f"{path}: event file over {MAX_EVENT_BYTES} bytes")
        data = loads_json(p.read_bytes(), str(path))
    except OSError as err:
        raise ConfigError(f"{path}: cannot read the event: {err.strerror}") from None
    try:
        return WorkflowRunEvent.model_validate(data).workflow_run
    except ValidationError as err:
        first = err.errors()[0]
        raise ConfigError(f"{path}: not a workflow_run event: {'.'.join(map(str, first['loc']))}: "
                          f"{first['msg']}") from None


def _read_small(f: Path) -> str:
    return f.read_bytes()[:MAX_FILE_BYTES].decode(errors="replace")


def _shown(name: str) -> str:
    """An artifact file name as it may appear in a posted message (the PR's code chose it)."""
    return "'" + re.sub(r"[^A-Za-z0-9._-]", "?", name)[:40] + "'"


def check_artifact(folder: Path) -> dict[str, Path]:
    """Name -> path of the artifact's files, after the shape and size bounds (ArtifactRefused otherwise)."""
    if not folder.is_dir() or folder.is_symlink():
        raise ArtifactRefused(f"{folder}: the plan artifact is missing")
    files: dict[str, Path] = {}
    total = 0
    for i, f in enumerate(sorted(folder.iterdir())):
        if i >= MAX_FILES:
            raise ArtifactRefused(f"plan artifact has more than {MAX_FILES} files")
        if f.is_symlink() or not f.is_file():
            raise ArtifactRefused(f"plan artifact holds {_shown(f.name)}, which is not a plain file")
        if not _NAME.match(f.name):
            raise ArtifactRefused(f"plan artifact holds an unexpected file {_shown(f.name)}")
        size = f.stat().st_size
        total += size
        if size > MAX_FILE_BYTES or total > MAX_TOTAL_BYTES:
            raise ArtifactRefused(f"plan artifact over its size bounds ({MAX_FILE_BYTES} bytes a file, "
                                  f"{MAX_TOTAL_BYTES} in all)")
        files[f.name] = f
    return files


def read_outcomes(folder: Path) -> tuple[PlanMeta, dict[str, PlanOutcome]]:
    """The artifact's hint (PR, SHA) and its plan outcomes by experiment path; ArtifactRefused if out of bounds."""
    files = check_artifact(folder)
    meta = PlanMeta()
    if "meta.json" in files:
        try:
            meta = PlanMeta.model_validate(loads_json(files["meta.json"].read_bytes(), "plan artifact meta.json"))
        except (ConfigError, ValidationError) as err:
            raise ArtifactRefused(f"plan artifact meta.json is not valid: {str(err).splitlines()[0]}") from None
    out: dict[str, PlanOutcome] = {}
    for name in sorted(n for n in files if n.endswith(".file")):
        stem = name.removesuffix(".file")
        path = _read_small(files[name]).strip()[:300]
        if stem + ".rc" in files:
            rc_text = _read_small(files[stem + ".rc"]).strip()
            rc = int(rc_text) if rc_text.isdigit() and len(rc_text) < 4 else 1
            stderr = _read_small(files[stem + ".err"]) if stem + ".err" in files else ""
            out[path] = PlanOutcome(path, error="timed out" if rc == 124 else _last_error(stderr, rc))
            continue
        try:
            out[path] = PlanOutcome(path, plan=Plan.model_validate_json(files[stem + ".json"].read_bytes()))
        except (KeyError, ValidationError) as e:
            first = str(e).splitlines()[0] if isinstance(e, ValidationError) else "missing"
            out[path] = PlanOutcome(path, error=f"plan output is not a valid Plan: {first}")
    return meta, out


def target_pull(bot: Bot, repo: str, run: WorkflowRun, meta: PlanMeta) -> int:
    """The PR to report on, decided by the event; the artifact's hint must agree with it or the run is refused."""
    if meta.head_sha is not None and meta.head_sha != run.head_sha:
        raise ArtifactRefused(f"plan artifact names another commit than the one the workflow ran for "
                              f"({run.head_sha[:7]}): refusing it")
    numbers = [p.number for p in run.pull_requests]
    if numbers:
        if meta.pr is not None and meta.pr not in numbers:
            raise ArtifactRefused(f"plan artifact names PR #{meta.pr}, but the workflow ran for "
                                  f"{', '.join(f'#{n}' for n in numbers)}: refusing it")
        return meta.pr if meta.pr is not None else numbers[0]
    # GitHub gives no pull_requests for a PR from a fork: the hint is checked against GitHub's own record.
    if meta.pr is None:
        raise ArtifactRefused("the workflow_run event names no pull request and the artifact no PR number")
    env, _ = bot.env_for(None)
    pr = env.gh.get_pull(repo, meta.pr)
    head_repo = ((pr.get("head") or {}).get("repo") or {}).get("full_name")
    want_repo = run.head_repository.full_name if run.head_repository else None
    if pr.get("head", {}).get("sha") != run.head_sha or (want_repo is not None and head_repo != want_repo):
        raise ArtifactRefused(f"plan artifact names PR #{meta.pr}, whose head is not the workflow's commit "
                              f"{run.head_sha[:7]}: refusing it")
    return meta.pr


def plan_report(bot: Bot, folder: Path, repo: str, event_path: str | None = None) -> None:
    if not repo:
        raise OpenlabError("GITHUB_REPOSITORY is not set")
    run = read_event(event_path)
    refused: ArtifactRefused | None = None
    try:
        meta, outcomes = read_outcomes(folder)
        number = target_pull(bot, repo, run, meta)
    except ArtifactRefused as err:
        refused, outcomes = err, {}
        if not run.pull_requests:  # no PR we can trust to tell: say it in the job log only
            raise
        number = run.pull_requests[0].number
    env, executor = bot.env_for(None)
    from bot.handlers import load_repo_config

    config, _ = load_repo_config(env, repo)
    pull = pull_info(env, repo, env.gh.get_pull(repo, number), config)
    if pull.head_sha != run.head_sha:
        print(json.dumps({"skipped": f"plan is for {run.head_sha[:7]}, PR head is now {pull.head_sha[:7]}"}))
        if refused is not None:
            raise refused
        return
    if refused is not None:
        outcomes = {e.path: PlanOutcome(e.path, error=str(refused)) for e in pull.experiments}
    prereg = prereg_statuses(env, repo, [e.issue for e in pull.experiments], config)
    flops = {n: (env.view.preregistration(repo, n) or {}).get("planned_flops") for n in prereg}
    for action in plan_actions(repo, pull.number, pull.head_sha, pull.experiments, outcomes, prereg, flops, config):
        executor.apply(action)
    if refused is not None:
        raise refused
