"""Read a finished run's outputs from the store, validate them, and attest them.

Where the outputs are: the executor writes one experiment record per launch at
``{prefix}/experiments/{run_id}.json`` listing every step and its output folder; the run's ``results.json`` (and
the ``metrics.jsonl`` beside it or beside the training step) is in one of those folders. Everything read here was
written by the PR's code, so it is validated by :mod:`runner.schema` and never trusted further than that.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from runner import attest, store
from runner.executor.records import ExperimentRecord, RecordError, parse_record
from runner.schema import Attestation, Results, ResultsError, loads_results
from runner.tracking import read_metric_lines

RESULTS = "results.json"
METRICS = "metrics.jsonl"
MAX_RESULTS_BYTES = 2_000_000
MAX_METRICS_BYTES = 50_000_000
MAX_METRIC_LINES = 2_000
METRIC_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,63}")


class RunOutputError(Exception):
    """The run finished but its outputs cannot be used; the message is shown on the PR (escaped)."""


class RunOutputs(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    results: Results
    results_url: str
    record_url: str
    metrics_text: str | None = None
    metrics_url: str | None = None


def record_url(prefix: str, run_id: str) -> str:
    return store.join(prefix, "experiments", f"{run_id}.json")


def _read(url: str, limit: int = MAX_RESULTS_BYTES) -> bytes | None:
    try:
        if not store.exists(url):
            return None
        data = store.read_bytes(url)
    except (OSError, ValueError):
        return None
    if len(data) > limit:
        raise RunOutputError(f"`{url.rsplit('/', 1)[-1]}` is {len(data)} bytes, over the {limit} allowed")
    return data


def read_outputs(prefix: str, run_id: str) -> RunOutputs:
    rec_url = record_url(prefix, run_id)
    raw = _read(rec_url)
    if raw is None:
        raise RunOutputError("the job wrote no experiment record (it failed before the executor started)")
    try:
        record = parse_record(ExperimentRecord, raw, "experiment record")
    except RecordError as err:
        raise RunOutputError(str(err)) from None
    folders = [s.output_path for s in record.steps if s.outcome in ("succeeded", "skipped")]
    results_url = next((u for f in reversed(folders) if store.exists(u := store.join(f, RESULTS))), None)
    if results_url is None:
        steps = ", ".join(f"{s.identity} ({s.outcome})" for s in record.steps) or "none"
        raise RunOutputError(f"no `results.json` in the outputs of the run's steps: {steps}")
    data = _read(results_url)
    if data is None:
        raise RunOutputError("`results.json` vanished while being read")
    try:
        results = loads_results(data, "results.json")
    except ResultsError as err:
        raise RunOutputError(f"`results.json` does not match the results schema: {err}") from None
    metrics = metrics_url = None
    for folder in [results_url.rsplit("/", 1)[0], *reversed(folders)]:
        m = _read(url := store.join(folder, METRICS), limit=MAX_METRICS_BYTES)
        if m is not None:
            metrics, metrics_url = m.decode("utf-8", errors="replace"), url
            break
    return RunOutputs(results=results, results_url=results_url, record_url=rec_url, metrics_text=metrics,
                      metrics_url=metrics_url)


def read_metrics(url: str) -> str | None:
    """The metrics text at ``url`` (written by the PR's code), or None when it is gone or unreadable."""
    try:
        data = _read(url, limit=MAX_METRICS_BYTES)
    except RunOutputError:
        return None
    return data.decode("utf-8", errors="replace") if data is not None else None


def public_metrics(text: str, max_lines: int = MAX_METRIC_LINES) -> str | None:
    """The metrics.jsonl committed beside results.json (the run page's curves): rebuilt from the PR's file, not
    copied, since that file is the PR code's output. Each line keeps ``step`` and the finite numbers under plain
    metric names; other keys and bad lines are dropped; long runs keep every eval line and evenly spaced others,
    at most ``max_lines``. None when nothing is left."""
    rows: list[dict[str, float]] = []
    for obj in read_metric_lines(text)[0]:
        step = obj.get("step")
        if not isinstance(step, int | float) or isinstance(step, bool) or not math.isfinite(step):
            continue
        row = {k: v for k, v in obj.items() if k != "step" and METRIC_KEY.fullmatch(k)
               and isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)}
        if row:
            rows.append({"step": step, **row})
    if not rows:
        return None
    if len(rows) > max_lines:
        is_eval = [any(k.startswith("eval/") for k in r) for r in rows]
        evals = [i for i, e in enumerate(is_eval) if e][-(max_lines // 2):]
        others = [i for i, e in enumerate(is_eval) if not e]
        room = max_lines - len(evals)
        if len(others) > room:
            stride = (len(others) - 1) / (room - 1)
            others = [others[round(i * stride)] for i in range(room)]
        rows = [rows[i] for i in sorted({*evals, *others})]
    return "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)


def attest_results(
    results: Results, *, run_id: str, sha: str, started_at: datetime | None, finished_at: datetime | None,
    private_pem: bytes | None, path: str | None = None,
) -> tuple[Results, str | None]:
    """Add the scheduler's attestation (signed when a key is configured). Returns (results, note for the PR).

    The attestation states what the scheduler itself knows: it ran ``run_id`` at ``sha`` between those times,
    the job produced exactly these results (the signature covers the whole file), and they belong at ``path`` in
    the repository. A commit named inside the results' own provenance is the PR
    code's claim (e.g. the git state of an installed openlab); a mismatch is reported, not signed away.
    """
    notes = []
    claimed = results.provenance.git_sha
    if claimed and claimed != sha:
        notes.append(f"the results' provenance names commit {claimed[:12]}; the job ran the approved {sha[:12]}")
    now = datetime.now(UTC)
    att = Attestation(
        run_id=run_id, sha=sha, config_fingerprint=results.provenance.config_fingerprint,
        scheduler_started_at=started_at or results.provenance.started_at,
        scheduler_finished_at=finished_at or now, signer="unsigned", path=path,
    )
    out = results.model_copy(update={"attestation": att})
    if not private_pem:
        notes.append("not signed: the bot has no signing key (OPENLAB_SIGNING_KEY)")
        return out, "; ".join(notes)
    try:
        return attest.sign(out, private_pem), "; ".join(notes) or None
    except ValueError as err:
        notes.append(f"not signed: the signing key is unusable ({err})")
        return out, "; ".join(notes)
