"""One launch of an experiment file: load, plan or run it. What ``openlab plan`` and ``openlab run`` call."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from runner import store
from runner.executor import provenance, ray_env
from runner.executor.engine import RunOptions, RunReport, run_graph
from runner.executor.loader import Experiment, load_experiment
from runner.executor.planner import make_plan
from runner.executor.records import LaunchInfo, utcnow
from runner.schema import Plan
from runner.settings import RunnerEnvironment

DEFAULT_PREFIX = "out/steps"


def resolve_prefix(prefix: str | None) -> str:
    """``--prefix``, else ``OPENLAB_STORAGE_PREFIX``, else ``out/steps``; a local prefix is made absolute so status
    and data paths can never diverge with the working directory (Marin's #6334)."""
    p = prefix or os.environ.get("OPENLAB_STORAGE_PREFIX") or DEFAULT_PREFIX
    if store.is_local(p):
        return str(store.local_path(p).expanduser().resolve())
    return p.rstrip("/")


def new_run_id(experiment: str) -> str:
    stem = Path(experiment).stem
    return f"local-{stem}-{utcnow():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def plan_experiment(
    path: str | Path, prefix: str | None = None, *, rerun_failed: bool = False, strict: bool = False
) -> Plan:
    exp = load_experiment(path)
    plan, _ = make_plan(
        exp.graph, resolve_prefix(prefix), exp.display, rerun_failed=rerun_failed, strict=strict
    )
    return plan


def launch_info(exp: Experiment, prefix: str, run_id: str, ray_address: str | None) -> LaunchInfo:
    job_id = None
    try:
        import ray

        if ray.is_initialized():
            job_id = ray.get_runtime_context().get_job_id()
    except Exception:  # noqa: BLE001 - provenance is best effort
        job_id = None
    pr = RunnerEnvironment().pr
    return LaunchInfo(
        pr=int(pr) if pr and pr.isdigit() else None,
        run_id=run_id,
        experiment=exp.display,
        prefix=prefix,
        git=provenance.git_info(exp.path),
        user=provenance.user(),
        host=provenance.host(),
        argv=provenance.argv(),
        ray_job_id=job_id,
        ray_address=ray_address,
    )


def run_experiment(
    path: str | Path,
    prefix: str | None = None,
    *,
    ray_address: str | None = None,
    run_id: str | None = None,
    options: RunOptions | None = None,
    num_cpus: int | None = None,
) -> RunReport:
    """Run an experiment on embedded Ray (default) or the cluster at ``ray_address``/``RAY_ADDRESS``."""
    exp = load_experiment(path)
    prefix = resolve_prefix(prefix)
    from runner.executor.state import StorageError, check_prefix_writable

    check_prefix_writable(prefix)
    opts = options or RunOptions()
    plan, _ = make_plan(exp.graph, prefix, exp.display, rerun_failed=opts.rerun_failed, strict=opts.strict)
    if all(s.action == "skip" for s in plan.steps) and not any(
        s.reason.startswith("FAILED") for s in plan.steps
    ):
        # Everything is done: record the launch without starting Ray.
        info = launch_info(exp, prefix, run_id or new_run_id(exp.display), None)
        return run_graph(exp.graph, info, opts, ray_needed=False)
    if prefix.startswith("memory://"):
        # Ray workers are other processes, each with its own memory filesystem: outputs would vanish.
        raise StorageError(f"storage prefix {prefix}: memory:// is per process; use a local path or gs:// to run")
    where = ray_env.connect(ray_address, num_cpus=num_cpus)
    needs = {i: s.resources.flat() for i, s in exp.graph.steps.items()}
    problems = ray_env.check_feasible(needs, embedded=where == "embedded")
    for p in problems:
        opts.log(f"[openlab] warning: {p}")
    info = launch_info(
        exp, prefix, run_id or new_run_id(exp.display), None if where in ("embedded", "existing") else where
    )
    return run_graph(exp.graph, info, opts)
