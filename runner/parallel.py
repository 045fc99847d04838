"""Devices: a 1-D ``data`` mesh over every device, data parallel by default, FSDP on request.

- **Data parallel** (``train.parallelism: data``): parameters and optimizer state replicated, each batch split
  along its example axis over the ``data`` mesh axis; XLA inserts the gradient all-reduce.
- **FSDP** (``train.parallelism: fsdp``): additionally shards every parameter and optimizer-state array along
  its first axis that divides the device count (ZeRO-3 style); XLA all-gathers weights where they are used.
- **Multi-host** (a TPU pod slice, several GPU hosts): call :func:`maybe_initialize_distributed` before
  touching devices. It runs ``jax.distributed.initialize()`` when ``JAX_COORDINATOR_ADDRESS`` (with
  ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID``) is set, or when ``OPENLAB_DISTRIBUTED=1`` asks JAX to
  auto-detect the cluster (Cloud TPU, SLURM, Open MPI). Every host then runs the same ``openlab train`` command;
  the mesh spans all hosts' devices, each host materialises only its own shards of each batch (batches are a
  pure function of the step, so no data needs to move between hosts), process 0 writes results and
  metrics, and each process writes its own checkpoint shards (runner.checkpoint).
"""

from __future__ import annotations

import os
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from runner.errors import ConfigError

_initialized = False


def maybe_initialize_distributed() -> bool:
    """Join a multi-host JAX cluster when the environment asks for one; True if it did."""
    global _initialized
    if _initialized:
        return True
    addr = os.environ.get("JAX_COORDINATOR_ADDRESS")
    if addr:
        jax.distributed.initialize(
            coordinator_address=addr,
            num_processes=int(os.environ["JAX_NUM_PROCESSES"]),
            process_id=int(os.environ["JAX_PROCESS_ID"]),
        )
    elif os.environ.get("OPENLAB_DISTRIBUTED") == "1":
        jax.distributed.initialize()
    else:
        return False
    _initialized = True
    return True


def is_primary() -> bool:
    return jax.process_index() == 0


def make_mesh() -> Mesh:
    return Mesh(np.array(jax.devices()), ("data",))


def check_batch(mesh: Mesh, batch_size: int, grad_accum: int) -> None:
    n = mesh.devices.size
    micro = batch_size // grad_accum
    if micro % n:
        raise ConfigError(
            f"train.batch_size: {batch_size} / grad_accum {grad_accum} = {micro} sequences per micro-batch, "
            f"not divisible by the {n} devices"
        )


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, PartitionSpec())


def batch_sharding(mesh: Mesh, ndim: int, axis: int = 0) -> NamedSharding:
    spec: list[Any] = [None] * ndim
    spec[axis] = "data"
    return NamedSharding(mesh, PartitionSpec(*spec))


def _fsdp_spec(shape: tuple[int, ...], n: int) -> PartitionSpec:
    for axis, size in enumerate(shape):
        if size % n == 0 and size >= n:
            spec: list[Any] = [None] * len(shape)
            spec[axis] = "data"
            return PartitionSpec(*spec)
    return PartitionSpec()


def state_shardings(state: Any, mesh: Mesh, fsdp: bool) -> Any:
    """A sharding for every leaf of ``state`` (params, optimizer state, counters)."""
    n = mesh.devices.size
    if not fsdp or n == 1:
        return jax.tree_util.tree_map(lambda _: replicated(mesh), state)
    return jax.tree_util.tree_map(lambda x: NamedSharding(mesh, _fsdp_spec(np.shape(x), n)), state)


def put_global(array: np.ndarray, sharding: NamedSharding) -> jax.Array:
    """A global jax.Array from a host array every process can compute; each process fills only its shards."""
    return jax.make_array_from_callback(array.shape, sharding, lambda idx: array[idx])


def to_host(x: jax.Array) -> np.ndarray:
    """Gather a (possibly sharded, possibly multi-host) array to a numpy array on every process."""
    if jax.process_count() > 1 and not x.is_fully_addressable:
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(jax.device_get(x))
