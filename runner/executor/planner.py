"""What a launch would do with each step, and why: the ``openlab plan`` JSON and the executor's first pass.

| on disk                         | action | note                                                     |
|---------------------------------|--------|----------------------------------------------------------|
| nothing                         | run    |                                                          |
| SUCCESS                         | skip   | fingerprint drift is a warning, an error when pinned      |
| SUCCESS, dev version            | run    | dev versions are rebuilt every launch                    |
| RUNNING, live lease             | wait   | another launch is on it; we wait for its outcome          |
| RUNNING, stale or missing lease | run    | its runner died: take over                               |
| FAILED                          | skip   | a failure (descendants do not run) unless --rerun-failed |

Planning only reads: it takes no lease and writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.errors import OpenlabError
from runner.executor import state
from runner.executor.graph import Graph
from runner.executor.records import StepStatus
from runner.executor.step import SELF, Step, diff_payloads, output_path, substitute
from runner.schema import Plan, PlanStep


class PlanError(OpenlabError):
    """The graph cannot run: a pinned fingerprint changed, or an input is missing."""


@dataclass
class Decision:
    action: str  # run | skip | wait
    reason: str
    failed_before: bool = False
    warning: str | None = None


def _where(step: Step) -> str:
    return f"{step.defined_at}: " if step.defined_at else ""


def decide(step: Step, out: str, *, rerun_failed: bool = False, strict: bool = False) -> Decision:
    if step.pin is not None and step.pin != step.fingerprint:
        raise PlanError(
            f"{_where(step)}step {step.identity} is pinned to fingerprint {step.pin[:12]} but its config "
            f"now hashes to {step.fingerprint[:12]}: bump the version or update the pin"
        )
    status = state.read_status(out)
    if status is None:
        return Decision("run", "not built yet")
    if status.status == StepStatus.SUCCESS:
        if step.is_dev:
            return Decision("run", "dev version: rebuilt on every launch")
        return _drift(
            step, out, strict, f"done: SUCCESS by run {status.run_id} at {status.updated_at:%Y-%m-%d %H:%M}Z"
        )
    if status.status == StepStatus.RUNNING:
        lease = state.read_lease(out)
        if lease is not None and not lease.is_stale():
            return Decision(
                "wait", f"running elsewhere: run {lease.run_id}, heartbeat {lease.age_s():.0f}s ago"
            )
        age = f"heartbeat {lease.age_s():.0f}s ago" if lease else "no lease"
        return Decision("run", f"RUNNING by run {status.run_id} but its runner is gone ({age}): take over")
    why = f"FAILED in run {status.run_id}: {status.message.splitlines()[0] if status.message else '?'}"
    if rerun_failed:
        return Decision("run", f"{why}; re-run requested")
    return Decision("skip", f"{why}; pass --rerun-failed to run it again", failed_before=True)


def _drift(step: Step, out: str, strict: bool, reason: str) -> Decision:
    record = state.read_step_record(out)
    if record is None or record.fingerprint == step.fingerprint:
        return Decision("skip", reason)
    changes = diff_payloads(record.fingerprint_payload, step.fingerprint_payload)
    text = f"step {step.identity}: config changed under the same version: {'; '.join(changes[:10])}"
    if strict or step.pin is not None:
        raise PlanError(f"{_where(step)}{text}; bump the version to rebuild")
    return Decision("skip", f"{reason} (config changed since: bump the version to rebuild)", warning=text)


def check_external(graph: Graph, prefix: str) -> None:
    for ident, readers in graph.external.items():
        out = output_path(prefix, ident)
        status = state.read_status(out)
        if status is None or status.status != StepStatus.SUCCESS:
            reader = graph.steps[readers[0]]
            found = status.status.value if status else "nothing"
            raise PlanError(
                f"{_where(reader)}step {reader.identity} reads {ident}, which this experiment does not declare "
                f"and which is not SUCCESS at {out} (found {found})"
            )


def _paths(graph: Graph, prefix: str, ident: str) -> dict[str, str]:
    return {d: output_path(prefix, d) for d in graph.deps[ident]} | {SELF: output_path(prefix, ident)}


def make_plan(
    graph: Graph, prefix: str, experiment: str, *, rerun_failed: bool = False, strict: bool = False
) -> tuple[Plan, dict[str, Decision]]:
    check_external(graph, prefix)
    decisions: dict[str, Decision] = {}
    steps: list[PlanStep] = []
    total_flops, total_tokens = 0.0, 0
    for ident, step in graph.steps.items():
        out = output_path(prefix, ident)
        d = decide(step, out, rerun_failed=rerun_failed, strict=strict)
        decisions[ident] = d
        flops, tokens = step.estimate()
        total_flops += flops or 0.0
        total_tokens += tokens or 0
        steps.append(
            PlanStep(
                name=step.name,
                version=step.version,
                identity=ident,
                kind=step.kind,
                fingerprint=step.fingerprint,
                config=substitute(step.config_json, _paths(graph, prefix, ident)),
                dependencies=graph.deps[ident],
                output_path=out,
                resources=step.resources.flat(),
                action=d.action,  # type: ignore[arg-type]
                reason=d.reason,
                model_flops=flops,
                tokens=tokens,
            )
        )
    warnings = [d.warning for d in decisions.values() if d.warning]
    plan = Plan(
        experiment=experiment,
        prefix=prefix,
        steps=steps,
        total_model_flops=total_flops,
        total_tokens=total_tokens,
        warnings=warnings,
    )
    return plan, decisions
