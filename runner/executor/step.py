"""Steps: a name, an explicit version, a function, a typed config, dependencies and resources.

Identity is ``name@version`` and the output lives at ``{prefix}/{name}/{version}``: no hash in the path, so a
path says which version of the data it holds and a change elsewhere never silently re-addresses it (Marin's
#5216, #4219). To rebuild, bump the version. A version named ``dev`` or ending in ``-dev`` is mutable: it is
rebuilt on every launch and never drift-checked.

A config refers to another step's output with ``other.output("sub/path")``, which is a plain string
``step://name@version/sub/path``, so pydantic and dataclass configs keep ``str`` fields. The executor resolves
these to real paths before calling the function, and keeps them as they are in the **fingerprint**: the
fingerprint is a sha256 of the config with dependencies named by identity, so prefix, region and resources
(execution details) never enter it. A changed fingerprint under the same version is reported field by field.
"""

from __future__ import annotations

import os
import re
import sys
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, is_dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from runner.config import RunConfig, fingerprint
from runner.errors import OpenlabError

SCHEME = "step://"
SELF = "self"
NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")
VERSION_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
_RUNNER_DIR = str(Path(__file__).resolve().parents[1])


class StepError(OpenlabError):
    """A step is declared wrongly (bad name, version, config or dependency)."""


class Resources(BaseModel):
    """What a step needs from the cluster. An execution detail: never part of identity."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpus: float = Field(default=1.0, ge=0)
    gpus: float = Field(default=0.0, ge=0)
    memory_gb: float | None = Field(default=None, gt=0)
    custom: dict[str, float] = Field(
        default_factory=dict, description='Ray custom resources, e.g. {"TPU-v4-8-head": 1, "TPU": 4}.'
    )

    @classmethod
    def tpu(cls, tpu_type: str, chips: int, cpus: float = 1.0) -> Resources:
        """Worker 0 of a slice: Ray's ``TPU-<type>-head`` label plus the chips of that host."""
        return cls(cpus=cpus, custom={f"TPU-{tpu_type}-head": 1.0, "TPU": float(chips)})

    def flat(self) -> dict[str, float]:
        out = {"CPU": self.cpus}
        if self.gpus:
            out["GPU"] = self.gpus
        if self.memory_gb:
            out["memory_gb"] = self.memory_gb
        return {**out, **self.custom}

    def ray_options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {"num_cpus": self.cpus, "num_gpus": self.gpus}
        if self.memory_gb:
            opts["memory"] = int(self.memory_gb * 2**30)
        if self.custom:
            opts["resources"] = dict(self.custom)
        return opts


@dataclass(frozen=True)
class StepContext:
    """What a step function gets besides its config: where to write and who is running it."""

    name: str
    version: str
    output_path: str
    run_id: str
    dep_paths: Mapping[str, str]

    @property
    def identity(self) -> str:
        return f"{self.name}@{self.version}"


StepFn = Callable[[Any, StepContext], Any]


def ref(identity: str, sub: str = "") -> str:
    """A reference to the output of the step ``name@version`` (possibly declared in another experiment)."""
    name, _, version = identity.partition("@")
    if not NAME_RE.match(name) or not VERSION_RE.match(version):
        raise StepError(f"bad step reference {identity!r}: expected name@version")
    return f"{SCHEME}{identity}/{sub.strip('/')}".rstrip("/")


def this_output(sub: str = "") -> str:
    """The step's own output folder, resolved at run time."""
    return f"{SCHEME}{SELF}/{sub.strip('/')}".rstrip("/")


def parse_ref(value: str) -> tuple[str, str]:
    """``step://name@version/sub`` -> (identity or 'self', sub)."""
    body = value[len(SCHEME) :]
    if body == SELF or body.startswith(SELF + "/"):
        return SELF, body[len(SELF) + 1 :]
    at = body.find("@")
    if at < 0:
        raise StepError(f"bad step reference {value!r}: expected step://name@version[/sub]")
    slash = body.find("/", at)
    if slash < 0:
        return body, ""
    return body[:slash], body[slash + 1 :]


def _defined_at() -> str | None:
    """file:line of the first caller outside the runner package: the experiment line that declared a step."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_RUNNER_DIR) and not filename.startswith("<"):
            rel = os.path.relpath(filename)
            return f"{filename if rel.startswith('..') else rel}:{frame.f_lineno}"
        frame = frame.f_back
    return None


@dataclass(frozen=True, eq=False)
class Step:
    name: str
    fn: StepFn
    config: Any = None
    version: str = "v1"
    deps: tuple[Step | str, ...] = ()
    resources: Resources = field(default_factory=Resources)
    kind: str = "custom"
    description: str = ""
    pin: str | None = None
    max_retries: int = 0
    defined_at: str | None = field(default_factory=_defined_at)

    def __post_init__(self) -> None:
        where = f"{self.defined_at}: " if self.defined_at else ""
        if not isinstance(self.name, str) or not NAME_RE.match(self.name):
            raise StepError(f"{where}step name {self.name!r}: use letters, digits, '_.-' and '/' separators")
        if not isinstance(self.version, str) or not VERSION_RE.match(self.version):
            raise StepError(f"{where}step {self.name}: version {self.version!r}: use letters, digits, '_.-'")
        if not callable(self.fn):
            raise StepError(f"{where}step {self.identity}: fn is not callable")
        if not isinstance(self.resources, Resources):
            raise StepError(f"{where}step {self.identity}: resources must be a Resources")
        object.__setattr__(self, "deps", tuple(self.deps))
        for d in self.deps:
            if not isinstance(d, Step | str):
                raise StepError(
                    f"{where}step {self.identity}: dependency {d!r} is neither a Step nor name@version"
                )
        self.config_json  # noqa: B018 - fail at declaration, with the line, when the config cannot be dumped

    @property
    def identity(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def is_dev(self) -> bool:
        return self.version == "dev" or self.version.endswith("-dev")

    def output(self, sub: str = "") -> str:
        """A reference to this step's output (or a path under it) for another step's config.

        The step is remembered (weakly) under its identity, so the graph finds it from the reference alone.
        """
        known = _OUTPUTS.setdefault(self.identity, [])
        if not any(r() is self for r in known):
            known.append(weakref.ref(self))
        return ref(self.identity, sub)

    def output_path(self, prefix: str) -> str:
        return output_path(prefix, self.identity)

    @cached_property
    def config_json(self) -> Any:
        try:
            return dump_config(self.config)
        except Exception as err:  # noqa: BLE001 - any dump failure is a declaration error
            where = f"{self.defined_at}: " if self.defined_at else ""
            raise StepError(f"{where}step {self.identity}: config cannot be serialised: {err}") from None

    @cached_property
    def referenced(self) -> list[str]:
        """Identities this step reads: explicit deps plus step:// references in its config, in order."""
        out: list[str] = []
        for d in self.deps:
            ident = d.identity if isinstance(d, Step) else parse_ref(ref(d))[0]
            if ident not in out:
                out.append(ident)
        for s in _strings(self.config_json):
            if s.startswith(SCHEME):
                ident, _ = parse_ref(s)
                if ident != SELF and ident not in out:
                    out.append(ident)
        return out

    @cached_property
    def fingerprint_payload(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "kind": self.kind,
            "config": self.config_json,
            "deps": sorted(self.referenced),
        }

    @cached_property
    def fingerprint(self) -> str:
        return fingerprint(self.fingerprint_payload)

    def fn_name(self) -> str:
        """module.qualname; for a function defined in an experiment file, file:qualname (its module name is
        synthetic)."""
        module = getattr(self.fn, "__module__", None) or "?"
        qual = getattr(self.fn, "__qualname__", repr(self.fn))
        file = getattr(sys.modules.get(module), "__file__", None)
        if module.startswith("openlab_experiment_") and file:
            rel = os.path.relpath(file)
            return f"{file if rel.startswith('..') else rel}:{qual}"
        return f"{module}.{qual}"

    def estimate(self) -> tuple[float | None, int | None]:
        """Model FLOPs and tokens of a train step (kind 'train' whose config holds a RunConfig); other steps
        that spend model FLOPs (Datashop's annotate) say so through their config's ``flops_estimate()``."""
        if callable(getattr(self.config, "flops_estimate", None)):
            return self.config.flops_estimate(), None
        run = find_run_config(self.config) if self.kind == "train" else None
        if run is None:
            return None, None
        from runner.flops import estimate

        est = estimate(run)
        return est.model_flops, est.tokens


_OUTPUTS: dict[str, list[weakref.ref[Step]]] = {}


@contextmanager
def declaration_scope() -> Iterator[None]:
    """Steps referenced inside the block are found only by graphs built inside it: two experiment files
    declaring the same identity never see each other's steps."""
    global _OUTPUTS
    saved, _OUTPUTS = _OUTPUTS, {}
    try:
        yield
    finally:
        _OUTPUTS = saved


def steps_referenced_as(identity: str) -> list[Step]:
    """The live steps whose ``output()`` produced references to ``identity``."""
    return [s for r in _OUTPUTS.get(identity, []) if (s := r()) is not None]


def output_path(prefix: str, identity: str) -> str:
    name, _, version = identity.partition("@")
    return f"{prefix.rstrip('/')}/{name}/{version}"


def find_run_config(config: Any) -> RunConfig | None:
    if isinstance(config, RunConfig):
        return config
    if isinstance(config, BaseModel) or is_dataclass(config):
        for value in vars(config).values():
            if isinstance(value, RunConfig):
                return value
    return None


def dump_config(config: Any) -> Any:
    """The JSON form of a config (pydantic model, dataclass, dict or None)."""
    if config is None:
        return {}
    if isinstance(config, BaseModel):
        return config.model_dump(mode="json")
    return TypeAdapter(type(config)).dump_python(config, mode="json")


def resolve_config(config: Any, resolved_json: Any) -> Any:
    """Rebuild a config of the same type from JSON whose step:// references were replaced by paths."""
    if config is None:
        return None
    if isinstance(config, dict):
        return resolved_json
    return TypeAdapter(type(config)).validate_python(resolved_json)


def substitute(obj: Any, paths: Mapping[str, str]) -> Any:
    """Replace every step:// string by the real path; ``paths`` maps identity (and 'self') to a folder."""
    if isinstance(obj, str) and obj.startswith(SCHEME):
        ident, sub = parse_ref(obj)
        base = paths[ident]
        return f"{base}/{sub}" if sub else base
    if isinstance(obj, dict):
        return {k: substitute(v, paths) for k, v in obj.items()}
    if isinstance(obj, list):
        return [substitute(v, paths) for v in obj]
    return obj


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def diff_payloads(old: Any, new: Any, path: str = "") -> list[str]:
    """Field-by-field differences between two fingerprint payloads, as 'dotted.path: old -> new' lines."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in old:
                out.append(f"{sub}: added {_short(new[key])}")
            elif key not in new:
                out.append(f"{sub}: removed (was {_short(old[key])})")
            else:
                out.extend(diff_payloads(old[key], new[key], sub))
        return out
    if old != new:
        return [f"{path or '(root)'}: {_short(old)} -> {_short(new)}"]
    return []


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
