"""``openlab plan | run | submit | status | cancel``: experiments from the command line.

Every command prints JSON on stdout (a Plan, an ExperimentRecord, a Submission, a JobState) and progress on
stderr; user errors are one ``error:`` line with exit code 2, and a run with failed steps exits 1.
"""

from __future__ import annotations

import sys

import click

from runner.errors import OpenlabError

_prefix = click.option(
    "--prefix",
    default=None,
    help="Storage prefix (path, gs://, memory://). Default $OPENLAB_STORAGE_PREFIX or out/steps.",
)
_ray = click.option(
    "--ray", "ray_address", default=None, help="Ray address. Default $RAY_ADDRESS, else embedded local Ray."
)
# submit, status and cancel talk to a running cluster's Jobs API: there is no embedded Ray to fall back to.
_jobs_api = click.option(
    "--ray", "ray_address", default=None,
    help="Ray cluster address (its Jobs API). Default $RAY_ADDRESS, else http://127.0.0.1:8265 "
         "(a local `ray start --head`); nothing is started for you.",
)


@click.command()
@click.argument("experiment", type=click.Path(dir_okay=False))
@_prefix
@click.option("--rerun-failed", is_flag=True, help="Plan failed steps to run again.")
@click.option("--strict", is_flag=True, help="A changed config under the same version is an error.")
@click.option("--sandbox", is_flag=True,
              help="Plan in the bot's plan sandbox, from the checkout in the current directory, as the bot does.")
def plan(experiment: str, prefix: str | None, rerun_failed: bool, strict: bool, sandbox: bool) -> None:
    """Print the plan of EXPERIMENT as JSON without running anything."""
    from runner.executor.launch import plan_experiment

    if sandbox:
        if prefix or rerun_failed or strict:
            raise click.UsageError("--sandbox plans exactly as the bot does: no --prefix, --rerun-failed or --strict")
        _plan_sandboxed(experiment)
        return
    result = plan_experiment(experiment, prefix, rerun_failed=rerun_failed, strict=strict)
    for w in result.warnings:
        click.echo(f"warning: {w}", err=True)
    click.echo(result.model_dump_json(indent=2))


def _plan_sandboxed(experiment: str) -> None:
    """`openlab plan --sandbox`: the bot's own path (runner.sandbox_plan.plan_checkout) on the current checkout."""
    from pathlib import Path

    from runner.sandbox_plan import plan_checkout

    root = Path.cwd().resolve()
    target = (root / experiment).resolve()
    if not target.is_relative_to(root):
        raise OpenlabError(f"{experiment}: --sandbox plans files of the checkout in the current directory only")
    outcome = plan_checkout(root, target.relative_to(root).as_posix())
    if outcome.plan is None:
        raise OpenlabError(outcome.error or "plan failed")
    for w in outcome.plan.warnings:
        click.echo(f"warning: {w}", err=True)
    click.echo(outcome.plan.model_dump_json(indent=2))


@click.command()
@click.argument("experiment", type=click.Path(dir_okay=False))
@_prefix
@_ray
@click.option("--run-id", default=None, help="Run id (default: local-<experiment>-<time>-<random>).")
@click.option("--rerun-failed", is_flag=True, help="Run steps that failed before again.")
@click.option("--strict", is_flag=True, help="A changed config under the same version is an error.")
@click.option("--max-concurrent", default=8, show_default=True, type=click.IntRange(min=1))
@click.option("--num-cpus", default=None, type=click.IntRange(min=1), help="CPUs of the embedded Ray.")
def run(
    experiment: str,
    prefix: str | None,
    ray_address: str | None,
    run_id: str | None,
    rerun_failed: bool,
    strict: bool,
    max_concurrent: int,
    num_cpus: int | None,
) -> None:
    """Run EXPERIMENT's steps as Ray tasks; print the experiment record as JSON."""
    from runner.logs import ensure_logging

    ensure_logging()
    from runner.executor.engine import RunOptions
    from runner.executor.launch import run_experiment

    opts = RunOptions(rerun_failed=rerun_failed, strict=strict, max_concurrent=max_concurrent)
    report = run_experiment(
        experiment, prefix, ray_address=ray_address, run_id=run_id, options=opts, num_cpus=num_cpus
    )
    click.echo(report.record.model_dump_json(indent=2))
    click.echo(f"[openlab] experiment record: {report.record_path}", err=True)
    if not report.ok:
        click.echo(f"error: {len(report.failures)} step(s) failed:", err=True)
        for f in report.failures:
            click.echo(f"  - {f}", err=True)
        sys.exit(1)


@click.command()
@click.argument("experiment", type=click.Path(dir_okay=False))
@click.option("--sha", required=True, help="The commit to run (a checkout of exactly it is shipped).")
@_prefix
@_jobs_api
@click.option("--run-id", default=None, help="Submission id (the bot passes its run id).")
@click.option("--python", default="python", show_default=True, help="Python on the cluster.")
def submit(
    experiment: str, sha: str, prefix: str | None, ray_address: str | None, run_id: str | None, python: str
) -> None:
    """Submit EXPERIMENT at commit SHA to a Ray cluster as one Ray job."""
    from runner.executor import dispatch

    sub = dispatch.submit(experiment, sha, address=ray_address, prefix=prefix, run_id=run_id, python=python)
    click.echo(sub.model_dump_json(indent=2))


@click.command()
@click.argument("run_id", required=False)
@_jobs_api
@click.option("--logs", "show_logs", is_flag=True, help="Print the job's logs to stderr too.")
@click.option("--json", "as_json", is_flag=True, help="Without RUN_ID: print the active runs as JSON.")
def status(run_id: str | None, ray_address: str | None, show_logs: bool, as_json: bool) -> None:
    """Print the state of the Ray job RUN_ID as JSON; without RUN_ID, list the active runs (state, age, links)."""
    from runner.executor import dispatch

    if run_id is None:
        _list_active(dispatch.active(address=ray_address), dispatch.dashboard_url(ray_address), as_json)
        return
    state = dispatch.status(run_id, address=ray_address)
    if show_logs:
        click.echo(dispatch.logs(run_id, address=ray_address), err=True)
    click.echo(state.model_dump_json(indent=2))


def _list_active(jobs: list, dashboard: str, as_json: bool) -> None:  # type: ignore[type-arg]
    import json
    import os
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    entity, project = os.environ.get("WANDB_ENTITY"), os.environ.get("WANDB_PROJECT", "openlab")
    rows = []
    for j in jobs:
        age = (now - j.start_time).total_seconds() if j.start_time else None
        links = {"ray": f"{dashboard}/#/jobs/{j.run_id}"}
        if entity:
            links["wandb"] = f"https://wandb.ai/{entity}/{project}/runs/{j.run_id}"
        rows.append({"run_id": j.run_id, "state": j.status, "age_s": age, "experiment": j.metadata.get("experiment"),
                     "sha": j.metadata.get("sha"), "links": links})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no active runs")
        return
    for r in rows:
        age = "?" if r["age_s"] is None else f"{int(r['age_s'] // 60)}m{int(r['age_s'] % 60):02d}s"
        click.echo(f"{r['run_id']}  {r['state']:<8} {age:>8}  {r['experiment']}@{(r['sha'] or '')[:7]}  "
                   + "  ".join(r["links"].values()))


@click.command()
@click.argument("run_id")
@_jobs_api
def cancel(run_id: str, ray_address: str | None) -> None:
    """Stop the Ray job RUN_ID."""
    from runner.executor import dispatch

    click.echo(dispatch.cancel(run_id, address=ray_address).model_dump_json(indent=2))


def commands() -> list[click.Command]:
    return [plan, run, submit, status, cancel]


def main(argv: list[str] | None = None) -> None:
    """``python experiments/x.py plan|run [...]``: the experiment file as its own entry point."""
    import __main__

    args = list(sys.argv[1:] if argv is None else argv)
    cmd = {"plan": plan, "run": run}.get(args[0] if args else "")
    if cmd is None:
        click.echo("usage: python EXPERIMENT.py plan|run [options]", err=True)
        sys.exit(2)
    try:
        cmd.main([__main__.__file__, *args[1:]], standalone_mode=True)
    except OpenlabError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
