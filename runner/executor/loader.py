"""Loading an experiment file: run it as a module and take its ``STEPS`` list.

An experiment file is plain Python that builds steps and lists the ones it wants in ``STEPS`` (their
dependencies come along). Every way a file can be wrong comes back as one line naming the file and line: a
syntax error, an import error, an exception while building the steps, a missing or malformed ``STEPS``, a bad
step declaration, a cycle, two different steps with one identity.

The module is registered with cloudpickle *by value*, so step functions and config classes defined in the
file reach Ray workers that cannot import the file by name.
"""

from __future__ import annotations

import hashlib
import sys
import traceback
import types
from dataclasses import dataclass
from pathlib import Path

from runner.errors import OpenlabError
from runner.executor.graph import Graph, build_graph
from runner.executor.provenance import repo_root
from runner.executor.step import Step, declaration_scope

EXPERIMENT_MODULE_PREFIX = "openlab_experiment_"


class ExperimentError(OpenlabError):
    """The experiment file cannot be loaded."""


@dataclass
class Experiment:
    path: Path
    display: str  # relative to the repository root when possible
    steps: list[Step]
    graph: Graph
    module: types.ModuleType


def _display(path: Path) -> str:
    """Relative to the repository root; in a Ray job (a git archive, no .git) relative to the working dir."""
    for root in (repo_root(path), Path.cwd().resolve()):
        if root is not None:
            try:
                return str(path.resolve().relative_to(root))
            except ValueError:
                continue
    return str(path)


def _error_line(err: BaseException, filename: str) -> int | None:
    line = None
    for frame in traceback.extract_tb(err.__traceback__):
        if frame.filename == filename:
            line = frame.lineno
    return line


def load_experiment(path: str | Path) -> Experiment:
    p = Path(path).resolve()
    shown = _display(p)
    try:
        source = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ExperimentError(f"{path}: no such experiment file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ExperimentError(f"{path}: cannot read: {err}") from None
    try:
        code = compile(source, str(p), "exec")
    except SyntaxError as err:
        raise ExperimentError(f"{shown}:{err.lineno}: syntax error: {err.msg}") from None
    with declaration_scope():
        module = _exec(code, p, shown)
        steps = _steps(module, shown)
        try:
            graph = build_graph(steps)
        except OpenlabError as err:
            raise ExperimentError(str(err).replace(str(p), shown)) from None
    return Experiment(p, shown, steps, graph, module)


def _exec(code: types.CodeType, p: Path, shown: str) -> types.ModuleType:
    import cloudpickle

    digest = hashlib.sha1(str(p).encode()).hexdigest()[:8]
    name = f"{EXPERIMENT_MODULE_PREFIX}{p.stem}_{digest}"
    module = types.ModuleType(name)
    module.__file__ = str(p)
    sys.modules[name] = module
    root = repo_root(p)
    if root is not None and str(root) not in sys.path:
        sys.path.insert(0, str(root))  # so an experiment can import shared helpers from the checkout
    try:
        exec(code, module.__dict__)
    except (ImportError, ModuleNotFoundError) as err:
        sys.modules.pop(name, None)
        line = _error_line(err, str(p))
        raise ExperimentError(f"{shown}:{line or '?'}: import error: {err}") from None
    except Exception as err:  # noqa: BLE001 - anything the file raises is reported with its line
        sys.modules.pop(name, None)
        line = _error_line(err, str(p))
        msg = str(err).replace(str(p), shown)
        if not isinstance(err, OpenlabError):
            msg = f"{type(err).__name__}: {msg}"
        raise ExperimentError(f"{shown}:{line or '?'}: {msg}") from None
    cloudpickle.register_pickle_by_value(module)
    return module


def _steps(module: types.ModuleType, shown: str) -> list[Step]:
    steps = getattr(module, "STEPS", None)
    if steps is None:
        raise ExperimentError(f"{shown}: defines no STEPS (a list of the steps to run)")
    if isinstance(steps, Step):
        steps = [steps]
    if not isinstance(steps, list | tuple) or not steps:
        raise ExperimentError(f"{shown}: STEPS must be a non-empty list of steps")
    for i, s in enumerate(steps):
        if not isinstance(s, Step):
            raise ExperimentError(f"{shown}: STEPS[{i}] is a {type(s).__name__}, not a Step")
    return list(steps)
