"""Checkpoints: params, optimizer state, step and PRNG key, one atomic file per step, keep-last-N.

Each checkpoint is ``<dir>/step_<step:08d>.npz``: every array leaf of the train state (in pytree order) plus a
``__meta__`` entry (JSON: step, config, leaf paths/shapes/dtypes, a sha256 over all leaf bytes, cumulative
training seconds). It is serialised in memory and written through :func:`runner.store.atomic_write_bytes`
(temp file, fsync, rename; a single object upload on GCS), so a crash or a full disk mid-write leaves the
previous checkpoints untouched and never a half file under the real name. Older checkpoints are pruned only
after the new one is in place.

Resume is automatic: :meth:`Checkpointer.restore_latest` loads the newest file, verifies its sha256 and checks
that it was written by a compatible config (same model, optimizer, schedule, data and batch settings), naming
the first differing field otherwise. Arrays are restored bit for bit, and because batches are a pure function
of the step, a resumed run continues exactly as if never stopped.

Why not Orbax or per-array tensorstore: one file per checkpoint makes "complete or absent" a single rename
(or a single GCS object), with no commit markers, async threads or half-directories to reason about, and the
sha256 check catches silent corruption. The cost is that the whole state passes through host memory of
process 0 (fine to a few GB of state); sharded multi-host writes at larger scale would want tensorstore with
a manifest written last, as the token cache does.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import re
import zipfile
from dataclasses import dataclass
from typing import Any

import fsspec
import jax
import numpy as np
from fsspec.core import url_to_fs

from runner import store
from runner.config import RunConfig
from runner.errors import CheckpointError
from runner.parallel import is_primary, to_host

FORMAT_VERSION = 1
_NAME = re.compile(r"^step_(\d{8})\.npz$")

# Config fields that may change between a checkpoint and its resume without changing the trajectory.
_FREE_FIELDS = {"name", "track", "description", "author", "tracking", "eval", "train.log_every",
                "train.eval_every", "train.checkpoint_every", "train.keep_checkpoints", "data.cache_dir"}


@dataclass(frozen=True)
class Restored:
    state: Any
    step: int
    training_seconds: float
    path: str


def _flat(cfg: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in cfg.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_flat(v, key + "."))
        else:
            out[key] = v
    return out


def config_diff(saved: dict, current: dict) -> list[str]:
    """Fields whose change would alter the trajectory: 'field: saved -> current'."""
    a, b = _flat(saved), _flat(current)
    diffs = []
    for key in sorted(set(a) | set(b)):
        if any(key == f or key.startswith(f + ".") for f in _FREE_FIELDS):
            continue
        if a.get(key) != b.get(key):
            diffs.append(f"{key}: {a.get(key)!r} -> {b.get(key)!r}")
    return diffs


def _leaves(state: Any) -> tuple[list[str], list[np.ndarray]]:
    flat, _ = jax.tree_util.tree_flatten_with_path(state)
    arrays = [to_host(x) if isinstance(x, jax.Array) else np.asarray(x) for _, x in flat]
    return [jax.tree_util.keystr(p) for p, _ in flat], arrays


def _digest(arrays: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


class Checkpointer:
    def __init__(self, directory: str, keep: int) -> None:
        self.dir = directory
        self.keep = keep
        self.fs, self._root = url_to_fs(directory)

    def steps(self) -> list[int]:
        try:
            names = [p.rstrip("/").rsplit("/", 1)[-1] for p in self.fs.ls(self._root, detail=False)]
        except FileNotFoundError:
            return []
        return sorted(int(m.group(1)) for n in names if (m := _NAME.match(n)))

    def path(self, step: int) -> str:
        return store.join(self.dir, f"step_{step:08d}.npz")

    def save(self, state: Any, step: int, cfg: RunConfig, training_seconds: float) -> str:
        """Write ``state`` as checkpoint ``step``. Call on every process (gathering shards is collective);
        only process 0 writes."""
        names, arrays = _leaves(state)
        target = self.path(step)
        if not is_primary():
            return target
        meta = {
            "format": FORMAT_VERSION,
            "step": step,
            "config": cfg.model_dump(mode="json"),
            "leaves": [[n, list(a.shape), str(a.dtype)] for n, a in zip(names, arrays, strict=True)],
            "sha256": _digest(arrays),
            "training_seconds": training_seconds,
        }
        buf = io.BytesIO()
        entries = {f"leaf_{i:05d}": a for i, a in enumerate(arrays)}
        entries["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        np.savez(buf, **entries)  # type: ignore[arg-type]
        try:
            store.atomic_write_bytes(target, buf.getvalue())
        except OSError as err:
            why = "disk full" if err.errno == errno.ENOSPC else (err.strerror or str(err))
            kept = ", ".join(f"step {s}" for s in self.steps()) or "none"
            raise CheckpointError(
                f"cannot write checkpoint {target}: {why}; earlier checkpoints kept ({kept})"
            ) from None
        self._prune()
        return target

    def _prune(self) -> None:
        for s in self.steps()[: -self.keep]:
            self.fs.rm(self.fs._strip_protocol(self.path(s)))

    def restore_latest(self, template: Any, cfg: RunConfig) -> Restored | None:
        """The newest checkpoint restored into ``template``'s structure, or None when there is none.

        ``template`` may be abstract (``jax.ShapeDtypeStruct`` leaves): only its structure, shapes and dtypes
        are compared, so a resume needs no fresh initialisation.
        """
        steps = self.steps()
        if not steps:
            return None
        return self.restore(steps[-1], template, cfg)

    def restore(self, step: int, template: Any, cfg: RunConfig) -> Restored:
        path = self.path(step)
        names, arrays, meta = self._read(path)
        diff = config_diff(meta["config"], cfg.model_dump(mode="json"))
        if diff:
            raise CheckpointError(
                f"checkpoint {path} was written by a different config ({'; '.join(diff[:3])}); "
                "use a fresh --out or restore the original config"
            )
        flat, treedef = jax.tree_util.tree_flatten_with_path(template)
        want = [(jax.tree_util.keystr(p), tuple(np.shape(x)), str(np.dtype(x.dtype))) for p, x in flat]
        have = [(n, a.shape, str(a.dtype)) for n, a in zip(names, arrays, strict=True)]
        if want != have:
            first = next((w, h) for w, h in zip(want + [None], have + [None], strict=False) if w != h)
            raise CheckpointError(f"checkpoint {path} does not match this model: expected {first[0]}, found {first[1]}")
        state = jax.tree_util.tree_unflatten(treedef, arrays)
        return Restored(state=state, step=int(meta["step"]), training_seconds=float(meta["training_seconds"]), path=path)

    def _read(self, path: str) -> tuple[list[str], list[np.ndarray], dict]:
        try:
            with fsspec.open(path, "rb") as f:
                blob = f.read()
            with np.load(io.BytesIO(blob), allow_pickle=False) as z:
                meta = json.loads(bytes(z["__meta__"]).decode())
                arrays = [z[f"leaf_{i:05d}"] for i in range(len(meta["leaves"]))]
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, json.JSONDecodeError, EOFError) as err:
            raise CheckpointError(
                f"checkpoint {path} is corrupt ({type(err).__name__}: {str(err)[:80]}); "
                "delete it to resume from the one before"
            ) from None
        if meta.get("format") != FORMAT_VERSION or _digest(arrays) != meta.get("sha256"):
            raise CheckpointError(
                f"checkpoint {path} is corrupt (sha256 mismatch); delete it to resume from the one before"
            )
        return [n for n, _, _ in meta["leaves"]], arrays, meta
