"""The step graph: every step reachable from the experiment's list, deduplicated by identity, in order.

Two declarations of the same ``name@version`` with the same fingerprint are one step. With different
fingerprints they are an error naming both lines: one identity must mean one output. A reference to an
identity that is not declared here is an *external* input (a step of an earlier experiment): it must already
be SUCCESS at the prefix, which the planner checks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from runner.executor.step import Step, StepError, diff_payloads, steps_referenced_as


class GraphError(StepError):
    """Cycles, conflicting duplicates or dangling references."""


@dataclass
class Graph:
    steps: dict[str, Step]  # identity -> step, in topological order (dependencies first)
    deps: dict[str, list[str]]  # identity -> identities it reads (declared or external)
    external: dict[str, list[str]] = field(default_factory=dict)  # external identity -> its readers

    def dependents(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {i: [] for i in self.steps}
        for ident, ds in self.deps.items():
            for d in ds:
                if d in out:
                    out[d].append(ident)
        return out

    def descendants(self, ident: str) -> set[str]:
        children = self.dependents()
        seen: set[str] = set()
        todo = [ident]
        while todo:
            for c in children.get(todo.pop(), []):
                if c not in seen:
                    seen.add(c)
                    todo.append(c)
        return seen


def _where(step: Step) -> str:
    return f"{step.defined_at}: " if step.defined_at else ""


def _collect(roots: Iterable[Step]) -> dict[str, Step]:
    found: dict[str, Step] = {}
    todo = list(roots)
    seen: set[int] = set()
    while todo:
        step = todo.pop(0)
        if id(step) in seen:
            continue
        seen.add(id(step))
        prev = found.get(step.identity)
        if prev is None:
            found[step.identity] = step
        elif prev is not step and prev.fingerprint != step.fingerprint:
            diff = "; ".join(diff_payloads(prev.fingerprint_payload, step.fingerprint_payload)[:5])
            raise GraphError(
                f"{_where(step)}step {step.identity} is declared twice with different configs "
                f"(first at {prev.defined_at or '?'}): {diff}; give one of them another name or version"
            )
        todo.extend(d for d in step.deps if isinstance(d, Step))
        for ident in step.referenced:
            if ident not in found:
                todo.extend(steps_referenced_as(ident))
    return found


def build_graph(roots: Sequence[Step]) -> Graph:
    for i, s in enumerate(roots):
        if not isinstance(s, Step):
            raise GraphError(f"STEPS[{i}] is a {type(s).__name__}, not a Step")
    found = _collect(roots)
    deps = {ident: list(step.referenced) for ident, step in found.items()}
    external: dict[str, list[str]] = {}
    for ident, ds in deps.items():
        if ident in ds:
            raise GraphError(f"{_where(found[ident])}step {ident} depends on itself")
        for d in ds:
            if d not in found:
                external.setdefault(d, []).append(ident)
    order = _toposort(found, deps)
    return Graph(steps={i: found[i] for i in order}, deps=deps, external=external)


def _toposort(found: dict[str, Step], deps: dict[str, list[str]]) -> list[str]:
    """Depth-first order, dependencies first; a cycle is reported as the chain of identities."""
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    order: list[str] = []
    for root in found:
        if state.get(root):
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        path: list[str] = [root]
        state[root] = 1
        while stack:
            ident, i = stack[-1]
            ds = [d for d in deps[ident] if d in found]
            if i < len(ds):
                stack[-1] = (ident, i + 1)
                d = ds[i]
                if state.get(d) == 1:
                    cycle = path[path.index(d) :] + [d]
                    raise GraphError(f"{_where(found[d])}dependency cycle: {' -> '.join(cycle)}")
                if not state.get(d):
                    state[d] = 1
                    stack.append((d, 0))
                    path.append(d)
            else:
                stack.pop()
                path.pop()
                state[ident] = 2
                order.append(ident)
    return order
