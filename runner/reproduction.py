"""Reproductions: one speedrun submission re-run with N seeds as one experiment, and what came of it.

The bot's ``/verify`` dispatches the PR's speedrun file at the approved SHA with ``OPENLAB_SPEEDRUN_SEEDS=0,1,2``
in the Ray job's environment; :func:`runner.speedrun.default_speedrun` then returns :func:`reproduction_steps`
instead of its single run: the shared tokenize step and, per seed, a train step ``speedrun/<name>/seed<S>`` (the
submission's config with ``train.seed = S``) and its results step. One experiment, one plan, one budget check
(the plan's total FLOPs is N times the single run's).

:func:`read_seeds` reads what each seed produced from the executor's experiment record (the lab's own record of
the launch, never a file the PR wrote elsewhere): a failed seed is reported by seed, the others are kept.

:class:`Reproduction` is the aggregate document the bot writes and signs (``reproduction.json``) and the site
reads: per-seed BPB, their mean, std and 95% t-interval, whether the claim reproduces, the record decision.
"""

from __future__ import annotations

import base64
import os
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from runner import store
from runner.config import RunConfig
from runner.errors import ConfigError
from runner.executor import Step
from runner.stats import Summary
from runner.steps import speedrun_results, train

SEEDS_ENV = "OPENLAB_SPEEDRUN_SEEDS"
DEFAULT_SEEDS = 3
MAX_SEEDS = 16
REPRODUCTION_FILE = "reproduction.json"


def seeds_for(n: int) -> list[int]:
    """The seeds of an N-seed reproduction: 0..N-1 (seed 0 is the submission's own single-run seed)."""
    return list(range(n))


def parse_seeds(text: str) -> list[int]:
    """``"0,1,2"`` -> [0, 1, 2]; a clear error naming the variable otherwise."""
    try:
        seeds = [int(s) for s in text.replace(" ", "").split(",") if s]
    except ValueError:
        raise ConfigError(f"{SEEDS_ENV}={text!r}: expected comma-separated integers") from None
    if not seeds or len(seeds) > MAX_SEEDS or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ConfigError(f"{SEEDS_ENV}={text!r}: expected 1 to {MAX_SEEDS} distinct non-negative seeds")
    return seeds


def seed_step_name(name: str, seed: int) -> str:
    return f"speedrun/{name}/seed{seed}"


def reproduction_steps(steps: list[Step], seeds: list[int]) -> list[Step]:
    """``[tokenize, train, results]`` of a speedrun -> ``[tokenize, (train, results) per seed]``."""
    tok, trained = steps[0], steps[1]
    run: RunConfig = trained.config.run
    name = run.name
    out: list[Step] = [tok]
    for seed in seeds:
        cfg = RunConfig.model_validate(run.model_copy(update={"train": run.train.model_copy(update={"seed": seed})})
                                       .model_dump())
        t = train(seed_step_name(name, seed), cfg, version=trained.version, resources=trained.resources)
        out += [t, speedrun_results(f"{seed_step_name(name, seed)}/results", t, version=trained.version)]
    return out


def reproduce_if_asked(steps: list[Step]) -> list[Step]:
    """The reproduction of ``steps`` when the job was started with ``OPENLAB_SPEEDRUN_SEEDS``, else ``steps``."""
    text = os.environ.get(SEEDS_ENV)
    return reproduction_steps(steps, parse_seeds(text)) if text else steps


class SeedRun(BaseModel):
    """One seed of a reproduction: its results (attested by the bot) or why there are none."""

    model_config = ConfigDict(extra="forbid")

    seed: int
    step: str
    outcome: str
    bpb: float | None = None
    model_flops: float | None = None
    run_id: str | None = None
    data_fingerprint: str | None = None
    eval_sets: list[str] = []
    wandb_url: str | None = None
    results_url: str | None = None
    error: str | None = None


def read_seeds(prefix: str, run_id: str) -> list[tuple[SeedRun, bytes | None]]:
    """Every seed step of launch ``run_id`` with its raw ``results.json`` (None when it has none).

    Only the executor's record of the launch decides which folders are read."""
    from runner.executor.records import ExperimentRecord, parse_record

    raw = store.read_bytes(store.join(prefix, "experiments", f"{run_id}.json"))
    record = parse_record(ExperimentRecord, raw, "experiment record")
    by_identity = {s.identity: s for s in record.steps}
    out: list[tuple[SeedRun, bytes | None]] = []
    for s in record.steps:
        name = s.identity.split("@", 1)[0]
        parts = name.split("/")
        if s.kind != "train" or len(parts) != 3 or not parts[2].startswith("seed") or not parts[2][4:].isdigit():
            continue
        res = by_identity.get(f"{name}/results@{s.identity.split('@', 1)[1]}")
        seed = SeedRun(seed=int(parts[2][4:]), step=s.identity, outcome=s.outcome, error=s.error)
        data = None
        if res is not None and res.outcome in ("succeeded", "skipped"):
            url = store.join(res.output_path, "results.json")
            if store.exists(url):
                data, seed.results_url = store.read_bytes(url), url
        elif s.outcome in ("succeeded", "skipped") and res is not None:
            seed.outcome, seed.error = res.outcome, res.error or "the results step did not finish"
        out.append((seed, data))
    return sorted(out, key=lambda p: p[0].seed)


class RecordDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    accepted: bool
    reason: str
    p_value: float | None = None
    threshold: float
    previous_run_id: str | None = None
    previous_mean_bpb: float | None = None


class Reproduction(BaseModel):
    """``reproduction.json``: the signed aggregate of one N-seed reproduction (one schema: the bot writes it,
    the site reads it)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    run_id: str
    repo: str
    pr: int
    sha: str
    experiment: str
    name: str = Field(description="The method (the speedrun's name).")
    track: str
    author: str = Field(description="The PR author's login (never read from a results file).")
    affiliation: str | None = Field(None, description="From the preregistration issue, when it names one.")
    requested_by: str
    seeds: list[SeedRun]
    summary: Summary | None = None
    model_flops: float | None = None
    claimed_bpb: float | None = None
    tolerance_bpb: float
    reproduces: bool
    verdict: str
    problems: list[str] = Field(default_factory=list, description="Integrity checks that failed.")
    record: RecordDecision | None = None
    links: dict[str, str] = {}
    created_at: datetime
    signer: str = "unsigned"
    signature: str | None = None

    def bpbs(self) -> list[float]:
        return [s.bpb for s in self.seeds if s.bpb is not None]

    def signed_payload(self) -> bytes:
        """Everything but the signature, as pydantic's JSON (fields in schema order: canonical for one schema)."""
        return self.model_copy(update={"signature": None}).model_dump_json().encode()


def sign_reproduction(rep: Reproduction, private_pem: bytes) -> Reproduction:
    """The document with an Ed25519 signature over everything else in it (seeds and aggregate included)."""
    from runner.attest import key_id, load_private_key

    key = load_private_key(private_pem)
    unsigned = rep.model_copy(update={"signer": key_id(key.public_key()), "signature": None})
    return unsigned.model_copy(update={"signature": base64.b64encode(key.sign(unsigned.signed_payload())).decode()})


def verify_reproduction(rep: Reproduction, public_pem: bytes | Any) -> bool:
    """True only when ``rep`` is signed by this key (PEM bytes, or a loaded public key when checking many)."""
    from cryptography.exceptions import InvalidSignature

    from runner.attest import key_id, load_public_key

    if not rep.signature:
        return False
    try:
        key = load_public_key(public_pem) if isinstance(public_pem, bytes) else public_pem
        if rep.signer != key_id(key):
            return False
        key.verify(base64.b64decode(rep.signature, validate=True), rep.signed_payload())
    except (InvalidSignature, ValueError):
        return False
    return True
