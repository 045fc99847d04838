"""The launcher: plan, then run steps as Ray tasks in dependency order with bounded concurrency.

A failed step stops its descendants; independent branches go on, and every failure is listed at the end
(Marin's newer executor does the same). Steps another launch is running are waited for, and taken over when
that launch's lease goes stale. The experiment record is rewritten as steps finish, so a page can follow it.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runner import store
from runner.executor import state
from runner.executor.graph import Graph
from runner.executor.loader import EXPERIMENT_MODULE_PREFIX
from runner.executor.planner import Decision, make_plan
from runner.executor.records import (
    EXPERIMENTS_DIR,
    ExperimentRecord,
    ExperimentStep,
    LaunchInfo,
    StepStatus,
    dumps_record,
    utcnow,
)
from runner.executor.step import output_path
from runner.executor.worker import StepTask, TaskResult, execute, resolved_config

Log = Callable[[str], None]
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass
class RunOptions:
    rerun_failed: bool = False
    strict: bool = False
    max_concurrent: int = 8
    poll_s: float = 1.0
    lease_timeout_s: float = state.LEASE_TIMEOUT_S
    heartbeat_s: float = state.HEARTBEAT_S
    log: Log = _stderr


@dataclass
class RunReport:
    record: ExperimentRecord
    record_path: str
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def experiment_record_path(prefix: str, run_id: str) -> str:
    return store.join(prefix, EXPERIMENTS_DIR, f"{run_id}.json")


def _pickle_experiments_by_value(graph: Graph) -> None:
    """Ray pickles with its own cloudpickle: functions and config classes defined in an experiment file
    (a module workers cannot import by name) must travel by value."""
    import ray.cloudpickle

    for step in graph.steps.values():
        for name in {getattr(step.fn, "__module__", None), type(step.config).__module__}:
            module = sys.modules.get(name or "")
            if module is not None and module.__name__.startswith(EXPERIMENT_MODULE_PREFIX):
                ray.cloudpickle.register_pickle_by_value(module)


class _Run:
    def __init__(self, graph: Graph, launch: LaunchInfo, opts: RunOptions, ray_needed: bool) -> None:
        self.graph, self.launch, self.opts = graph, launch, opts
        self.prefix = launch.prefix
        if ray_needed:
            import ray

            self.ray = ray
            self.remote = ray.remote(execute)
            _pickle_experiments_by_value(graph)
        self.done: set[str] = set(graph.external)
        self.pending: list[str] = []
        self.waiting: set[str] = set()
        self.inflight: dict[Any, str] = {}
        self.failures: list[str] = []
        self.path = experiment_record_path(self.prefix, launch.run_id)
        self._last_write = 0.0

    def start(self, decisions: dict[str, Decision], warnings: list[str]) -> None:
        entries = []
        for ident, d in decisions.items():
            step = self.graph.steps[ident]
            entries.append(
                ExperimentStep(
                    identity=ident,
                    kind=step.kind,
                    output_path=output_path(self.prefix, ident),
                    action=d.action,  # type: ignore[arg-type]
                    reason=d.reason,
                )
            )
        self.record = ExperimentRecord(launch=self.launch, steps=entries, warnings=warnings)
        self.entries = {e.identity: e for e in entries}
        for ident, d in decisions.items():
            if d.failed_before:
                self._fail(ident, d.reason)
            elif d.action == "skip":
                self._set(ident, "skipped")
                self.done.add(ident)
            else:
                self.pending.append(ident)
                if d.action == "wait":
                    self.waiting.add(ident)
                    self._set(ident, "waiting")
        self._write(force=True)

    def _set(self, ident: str, outcome: str, error: str | None = None) -> None:
        e = self.entries[ident]
        e.outcome = outcome  # type: ignore[assignment]
        if error is not None:
            e.error = error
        if outcome == "running":
            e.started_at = utcnow()
        elif outcome in ("succeeded", "failed", "blocked"):
            e.finished_at = utcnow()

    def _fail(self, ident: str, message: str) -> None:
        step = self.graph.steps[ident]
        where = f" ({step.defined_at})" if step.defined_at else ""
        self.failures.append(f"{ident}{where}: {message}")
        self._set(ident, "failed", message)
        for d in self.graph.descendants(ident):
            if d in self.pending:
                self.pending.remove(d)
                self.waiting.discard(d)
                self._set(d, "blocked", f"dependency {ident} failed")
                self.opts.log(f"[openlab] {d}: not run, dependency {ident} failed")

    def _write(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_write > 1.0:
            self._last_write = now
            store.atomic_write_text(self.path, dumps_record(self.record))

    def _launchable(self) -> list[str]:
        return [
            i
            for i in self.pending
            if i not in self.waiting
            and i not in self.inflight.values()
            and all(d in self.done for d in self.graph.deps[i])
        ]

    def _launch(self, ident: str, force: bool) -> None:
        step = self.graph.steps[ident]
        deps = {d: output_path(self.prefix, d) for d in self.graph.deps[ident]}
        out = output_path(self.prefix, ident)
        try:
            config, config_json = resolved_config(step, out, deps)
        except Exception as err:  # noqa: BLE001 - a config that rejects its resolved paths fails the step
            self.pending.remove(ident)
            self._fail(ident, f"config does not validate with resolved paths: {err}")
            return
        task = StepTask(
            step=step,
            output_path=out,
            dep_paths=deps,
            config=config,
            config_json=config_json,
            launch=self.launch,
            lease_timeout_s=self.opts.lease_timeout_s,
            heartbeat_s=self.opts.heartbeat_s,
            force=force,
        )
        opts = {**step.resources.ray_options(), "name": ident, "max_retries": step.max_retries}
        ref = self.remote.options(**opts).remote(task)
        self.inflight[ref] = ident
        self._set(ident, "running")
        self.opts.log(f"[openlab] {ident}: started")

    def _handle(self, ident: str, res: TaskResult) -> None:
        if res.outcome == "held":
            self.waiting.add(ident)
            self._set(ident, "waiting")
            self.opts.log(f"[openlab] {ident}: waiting, {res.message}")
            return
        self.pending.remove(ident)
        if res.outcome == "failed":
            self.opts.log(f"[openlab] {ident}: FAILED: {res.message}")
            self._fail(ident, res.message)
        else:
            secs = (res.finished_at - res.started_at).total_seconds()
            self.opts.log(f"[openlab] {ident}: {res.outcome} ({secs:.1f}s)")
            self._set(ident, "succeeded" if res.outcome == "succeeded" else "skipped")
            self.done.add(ident)

    def _poll_waiting(self) -> None:
        for ident in sorted(self.waiting):
            out = output_path(self.prefix, ident)
            st = state.read_status(out)
            if st is not None and st.status == StepStatus.SUCCESS:
                self.waiting.discard(ident)
                self._handle(ident, TaskResult(ident, "skipped", "finished by another launch"))
            elif st is not None and st.status == StepStatus.FAILED and not self.opts.rerun_failed:
                self.waiting.discard(ident)
                self._handle(ident, TaskResult(ident, "failed", f"failed in run {st.run_id}: {st.message}"))
            else:
                lease = state.read_lease(out)
                if lease is None or lease.is_stale():
                    self.waiting.discard(ident)  # gone: launch it; the worker takes the lease over

    def loop(self, force: set[str]) -> None:
        while self.pending:
            for ident in self._launchable():
                if len(self.inflight) >= self.opts.max_concurrent:
                    break
                self._launch(ident, ident in force)
            if not self.inflight and not self.waiting:
                break  # nothing can progress (cannot happen with a valid graph; guards an endless loop)
            timeout = self.opts.poll_s if self.waiting else None
            ready: list[Any] = []
            if self.inflight:
                ready, _ = self.ray.wait(list(self.inflight), num_returns=1, timeout=timeout)
                if ready:
                    more, _ = self.ray.wait(list(self.inflight), num_returns=len(self.inflight), timeout=0)
                    ready = list({*ready, *more})
            else:
                time.sleep(self.opts.poll_s)
            for ref in ready:
                ident = self.inflight.pop(ref)
                self._handle(ident, self._result(ref, ident))
            if self.waiting:
                self._poll_waiting()
            self._write()

    def _result(self, ref: Any, ident: str) -> TaskResult:
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayError as err:
            # The worker process died (preemption, OOM, kill) after Ray's retries: record it as a failure.
            first = _ANSI.sub("", str(err)).splitlines()[0][:300]
            message = f"Ray task died: {type(err).__name__}: {first}"
            out = output_path(self.prefix, ident)
            st = state.read_status(out)
            if st is None or st.status == StepStatus.RUNNING:
                state.write_status(out, StepStatus.FAILED, self.launch.run_id, "launcher", message)
            return TaskResult(ident, "failed", message)

    def finish(self) -> RunReport:
        for ident in self.pending:
            self._set(ident, "blocked", "not run")
        self.record.failures = list(self.failures)
        self.record.status = "FAILED" if self.failures else "SUCCESS"
        self.record.finished_at = utcnow()
        self._write(force=True)
        return RunReport(self.record, self.path, list(self.failures))


def run_graph(
    graph: Graph, launch: LaunchInfo, opts: RunOptions | None = None, *, ray_needed: bool = True
) -> RunReport:
    """Run every step not already done; Ray must be initialised (see ray_env.connect) unless nothing runs."""
    opts = opts or RunOptions()
    state.check_prefix_writable(launch.prefix)
    plan, decisions = make_plan(
        graph, launch.prefix, launch.experiment, rerun_failed=opts.rerun_failed, strict=opts.strict
    )
    for w in plan.warnings:
        opts.log(f"[openlab] warning: {w}")
    run = _Run(graph, launch, opts, ray_needed)
    run.start(decisions, plan.warnings)
    force = {i for i, d in decisions.items() if d.action == "run" and graph.steps[i].is_dev}
    try:
        run.loop(force)
    except BaseException:
        run.record.failures = run.failures + ["launcher interrupted"]
        run.record.status = "FAILED"
        run.record.finished_at = utcnow()
        run._write(force=True)
        raise
    return run.finish()
