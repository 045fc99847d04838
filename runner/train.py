"""``train(cfg, out)``: the whole run, from data to ``results.json``.

1. Data: tokenizer, train split (token cache), eval sets, deterministic batches.
2. State: fresh from ``train.seed``, or restored bit for bit from the newest checkpoint in ``out/checkpoints``.
3. Loop: one jitted step per optimizer update; log every ``train.log_every``; eval every ``train.eval_every``;
   checkpoint every ``train.checkpoint_every`` (default: a tenth of the run) and at the end.
4. Final eval on every set, then ``out/results.json`` (validated by :class:`runner.schema.Results`).

Timing: the step is compiled ahead of time, so ``training_seconds`` counts step execution only (no compile,
eval or checkpoint time) and accumulates across resumes; it drives hardware FLOPs and MFU, which are null
where the device's peak is unknown (CPU). Re-running a finished ``out`` only re-evaluates and rewrites results.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import jax
import numpy as np
import optax
from jax.sharding import Mesh

from runner import runinfo, store
from runner.checkpoint import Checkpointer
from runner.config import RunConfig, fingerprint
from runner.data import Batches, TokenData, load_split, load_tokenizer
from runner.data.mixture import MixtureBatches
from runner.errors import ConfigError, OpenlabError
from runner.eval import evaluate, load_eval_sets
from runner.flops import FLOPS_FORMULA, lm_flops_per_token, param_count, peak_flops_per_chip
from runner.optim import eval_params, make_optimizer
from runner.parallel import check_batch, is_primary, make_mesh, maybe_initialize_distributed, put_global
from runner.schema import EvalSetResult, FlopsDetail, Provenance, Results, dumps_results
from runner.tracking import Tracker
from runner.trainstep import State, abstract_state, build_train_step, init_state, place_state, put_train_batch

__all__ = ["Interrupted", "train"]

log = logging.getLogger(__name__)
APPROVED_TOKENS_VAR = "OPENLAB_APPROVED_TOKENS"


class Interrupted(OpenlabError):
    """SIGTERM/SIGINT arrived: the run checkpointed the step it was on and stopped (rerun to resume)."""


class _StopFlag:
    """Preemption (SIGTERM, e.g. from Ray's stop_job or a TPU maintenance event) or Ctrl-C: finish the current
    step, checkpoint it, stop. Installed only in the main thread, where Python delivers signals."""

    requested = False

    def install(self) -> Callable[[], None]:
        self.requested = False
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

        def handler(signum: int, frame: object) -> None:
            self.requested = True

        for sig in previous:
            signal.signal(sig, handler)

        def restore() -> None:
            for sig, h in previous.items():
                signal.signal(sig, h)

        return restore


_STOP = _StopFlag()


@dataclass
class _Run:
    """Everything the loop and the final report need, prepared once by :func:`train`."""

    cfg: RunConfig
    out: Path
    mesh: Mesh
    tx: optax.GradientTransformation
    lr: optax.Schedule
    shardings: Any
    batches: Batches | MixtureBatches
    train_data: TokenData
    eval_sets: dict[str, TokenData]
    token_bytes: np.ndarray
    ckpt: Checkpointer


def approved_tokens() -> int | None:
    """The token count the bot approved for this job (``OPENLAB_APPROVED_TOKENS``, set by the dispatcher)."""
    raw = os.environ.get(APPROVED_TOKENS_VAR, "").strip()
    if not raw:
        return None
    try:
        return max(0, int(float(raw)))
    except ValueError:
        raise ConfigError(f"{APPROVED_TOKENS_VAR}={raw[:40]!r} is not a token count") from None


def check_token_budget(cfg: RunConfig) -> None:
    """Stop before the first step if the run would train past the approved token count (no partial overrun)."""
    cap = approved_tokens()
    if cap is not None and cfg.tokens > cap:
        raise ConfigError(
            f"train.steps x train.batch_size x model.seq_len = {cfg.tokens:,} tokens, over the {cap:,} approved "
            f"for this run ({APPROVED_TOKENS_VAR}); the approved plan must declare this config"
        )


def train(cfg: RunConfig, out: str, *, run_id: str | None = None, progress: bool | None = None) -> Results:
    """Train ``cfg``, writing results.json, metrics.jsonl and checkpoints under ``out``; resume if it has one."""
    check_token_budget(cfg)
    started_at = runinfo.now()
    maybe_initialize_distributed()
    run = _prepare(cfg, Path(out))
    abstract, _ = abstract_state(cfg, run.tx, run.mesh)
    restored = run.ckpt.restore_latest(abstract, cfg)
    if restored is None:
        state, start, train_seconds = init_state(cfg, run.tx, run.shardings), 0, 0.0
        if cfg.train.init_from:
            state = _start_from_pretrained(cfg, state, run.shardings)
    else:
        state = place_state(restored.state, run.shardings)
        start, train_seconds = restored.step, restored.training_seconds
        log.info("resuming from %s (step %d of %d)", restored.path, start, cfg.train.steps)

    run_id = runinfo.resolve_run_id(run.out, cfg, run_id)
    tracker = Tracker(run.out, cfg, run_id, start_step=start, progress=progress, enabled=is_primary())
    restore_signal = _STOP.install()
    try:
        state, train_seconds = _loop(run, tracker, state, start, train_seconds)
        evals = _eval_all(run, eval_params(state))
        tracker.log(cfg.train.steps, _eval_metrics(evals))
        results = _results(run, run_id, evals, train_seconds, tracker, started_at)
        tracker.summary({"bpb": results.bpb, "model_flops": results.model_flops, "mfu": results.mfu})
    finally:
        restore_signal()
        tracker.close()
    if is_primary():
        store.atomic_write_text(str(run.out / "results.json"), dumps_results(results))
        log.info("run %s done: bpb %.4f on %s; %s", run_id, results.bpb, cfg.eval.sets[0].name, run.out / "results.json")
    return results


def _start_from_pretrained(cfg: RunConfig, state: State, shardings: Any) -> State:
    """Swap the fresh params for pretrained ones (optimizer moments start at zero either way)."""
    from runner.pretrained import params_for

    params = params_for(cfg.model, cfg.train.init_from or "")
    log.info("starting from pretrained weights %s", cfg.train.init_from)
    placed = jax.tree_util.tree_map(lambda a, s: put_global(np.asarray(a), s), params, shardings["params"])
    return {**state, "params": placed}


def _prepare(cfg: RunConfig, out: Path) -> _Run:
    """Data, devices and optimizer; every bad input fails here, before any compile."""
    out.mkdir(parents=True, exist_ok=True)
    tok = load_tokenizer(cfg.data.tokenizer)
    if cfg.model.vocab_size < tok.vocab_size:
        raise ConfigError(
            f"model.vocab_size: {cfg.model.vocab_size} is smaller than the tokenizer's {tok.vocab_size} tokens"
        )
    batches: Batches | MixtureBatches
    if cfg.data.mixture:
        parts = {c.name: load_split(cfg.data, "train", source=c.source, tokenizer=tok) for c in cfg.data.mixture}
        batches = MixtureBatches.build(parts, cfg.data.weights(), cfg.model.seq_len, cfg.train.batch_size, cfg.train.seed)
        train_data = next(iter(parts.values()))  # for the tokenizer; the data fingerprint covers every part
    else:
        train_data = load_split(cfg.data, "train", tokenizer=tok)
        batches = Batches(train_data, cfg.model.seq_len, cfg.train.batch_size, cfg.train.seed)
    eval_sets = load_eval_sets(cfg, tok)
    token_bytes = np.zeros(cfg.model.vocab_size, dtype=np.int64)
    token_bytes[: tok.vocab_size] = tok.token_bytes()
    mesh = make_mesh()
    check_batch(mesh, cfg.train.batch_size, cfg.train.grad_accum)
    tx, lr = make_optimizer(cfg.optimizer, cfg.schedule, cfg.train.steps)
    _, shardings = abstract_state(cfg, tx, mesh)
    ckpt = Checkpointer(store.join(str(out), "checkpoints"), cfg.train.keep_checkpoints)
    return _Run(cfg, out, mesh, tx, lr, shardings, batches, train_data, eval_sets, token_bytes, ckpt)


def _loop(run: _Run, tracker: Tracker, state: State, start: int, train_seconds: float) -> tuple[State, float]:
    """Steps ``start .. train.steps``; returns the final state and cumulative training seconds."""
    cfg, t, mesh = run.cfg, run.cfg.train, run.mesh
    ckpt_every = t.checkpoint_every or max(1, t.steps // 10)
    step_fn = build_train_step(cfg, run.tx, run.lr, run.shardings, mesh)
    if start < t.steps:  # compile ahead of time so no step's timing includes it
        step_fn = step_fn.lower(state, put_train_batch(run.batches.batch(start), cfg, mesh)).compile()
    tokens_per_step = t.batch_size * cfg.model.seq_len
    peak = peak_flops_per_chip(jax.devices()[0].device_kind)
    flops_per_step = 3 * lm_flops_per_token(cfg.model) * tokens_per_step
    seg_start, seg_steps = time.perf_counter(), 0
    for step in range(start, t.steps):
        state, metrics = step_fn(state, put_train_batch(run.batches.batch(step), cfg, mesh))
        done, seg_steps = step + 1, seg_steps + 1
        stop = _STOP.requested
        do_ckpt = done % ckpt_every == 0 or done == t.steps or stop
        do_eval = t.eval_every is not None and done % t.eval_every == 0 and done != t.steps
        if not (done % t.log_every == 0 or do_ckpt or do_eval):
            continue
        m = {k: float(v) for k, v in jax.device_get(metrics).items()}  # waits for the step: timing is honest
        elapsed = time.perf_counter() - seg_start
        train_seconds += elapsed
        tps = seg_steps * tokens_per_step / elapsed if elapsed > 0 else None
        mfu = 100 * seg_steps * flops_per_step / (elapsed * peak * mesh.devices.size) if peak and elapsed else None
        tracker.log(done, {"train/loss": m["loss"], "train/lr": m["lr"], "train/grad_norm": m["grad_norm"],
                           "throughput/tokens_per_second": tps, "throughput/mfu": mfu})
        tracker.progress(done, m["loss"], tps)
        if do_eval:
            tracker.log(done, _eval_metrics(_eval_all(run, eval_params(state))))
        if do_ckpt:
            run.ckpt.save(state, done, cfg, train_seconds)
        if stop:
            raise Interrupted(f"stopped by signal at step {done}; checkpoint saved, run the same command to resume")
        seg_start, seg_steps = time.perf_counter(), 0
    return state, train_seconds


def _eval_all(run: _Run, params: Any) -> dict[str, EvalSetResult]:
    cfg = run.cfg
    bs = cfg.eval.batch_size or cfg.train.batch_size // cfg.train.grad_accum
    limits = {s.name: s.max_tokens for s in cfg.eval.sets}
    return {
        name: evaluate(params, cfg.model, data, run.token_bytes, batch_size=bs, mesh=run.mesh,
                       max_tokens=limits[name])
        for name, data in run.eval_sets.items()
    }


def _eval_metrics(evals: dict[str, EvalSetResult]) -> dict[str, float | None]:
    return {f"eval/{k}/{m}": getattr(v, m) for k, v in evals.items() for m in ("bpb", "loss")}


def _results(
    run: _Run,
    run_id: str,
    evals: dict[str, EvalSetResult],
    train_seconds: float,
    tracker: Tracker,
    started_at: datetime,
) -> Results:
    cfg = run.cfg
    kind = jax.devices()[0].device_kind
    chips = jax.device_count()
    peak = peak_flops_per_chip(kind)
    fwd = lm_flops_per_token(cfg.model)
    model_flops = 3.0 * fwd * cfg.tokens
    hw = train_seconds * chips * peak if peak is not None and train_seconds > 0 else None
    sha, dirty, remote = runinfo.git_state()
    data_fp = fingerprint({
        "tokenizer": run.train_data.manifest.tokenizer,
        "train": run.batches.fingerprint if isinstance(run.batches, MixtureBatches) else run.train_data.fingerprint,
        "eval": {k: v.fingerprint for k, v in run.eval_sets.items()},
    })
    return Results(
        run_id=run_id, name=cfg.name, track=cfg.track, bpb=evals[cfg.eval.sets[0].name].bpb,
        model_flops=model_flops, hardware_flops=hw, params=param_count(cfg.model), tokens=cfg.tokens,
        training_seconds=train_seconds, mfu=model_flops / hw if hw else None, author=cfg.author,
        description=cfg.description, config=cfg,
        flops=FlopsDetail(formula=FLOPS_FORMULA, model_flops_per_token=fwd, device_kind=kind, chips=chips,
                          peak_flops_per_chip=peak),
        eval=evals, tracking=tracker.info(),
        provenance=Provenance(
            git_sha=sha, git_dirty=dirty, git_remote=remote, config_fingerprint=cfg.fingerprint(),
            data_fingerprint=data_fp, versions=runinfo.versions(), devices=runinfo.devices(),
            host=runinfo.host(), argv=list(sys.argv), started_at=started_at, finished_at=runinfo.now(),
        ),
    )
