"""Status and lease files in a step's output folder, through fsspec (local, ``memory://``, ``gs://``).

Each write replaces a whole small object atomically (``runner.store``). Taking a lease: a local lease is
created with ``O_EXCL`` when absent; on an object store, and when taking over a stale lease, the runner writes
its lease and reads it back, and proceeds only if its own owner id is there (last writer wins; the loser sees
the other owner and waits). This leaves a race window of one read on object stores, which is acceptable for
steps that take minutes; GCS generation preconditions would close it and are the next step for gs://.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import uuid

from fsspec.core import url_to_fs

from runner import store
from runner.errors import OpenlabError
from runner.executor.records import (
    LEASE_FILE,
    STATUS_FILE,
    STEP_RECORD_FILE,
    LeaseRecord,
    RecordError,
    StatusRecord,
    StepRecord,
    StepStatus,
    dumps_record,
    parse_record,
    utcnow,
)

HEARTBEAT_S = float(os.environ.get("OPENLAB_HEARTBEAT_S", "10"))
LEASE_TIMEOUT_S = float(os.environ.get("OPENLAB_LEASE_TIMEOUT_S", "60"))


class StorageError(OpenlabError):
    """The prefix cannot be read or written."""


class LeaseHeld(Exception):
    """Another live runner holds the step."""

    def __init__(self, lease: LeaseRecord) -> None:
        super().__init__(f"held by {lease.owner} (run {lease.run_id}), heartbeat {lease.age_s():.0f}s ago")
        self.lease = lease


def worker_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def _read(url: str) -> bytes | None:
    try:
        return store.read_bytes(url)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise StorageError(f"cannot read {url}: {err}") from None


def read_status(out: str) -> StatusRecord | None:
    url = store.join(out, STATUS_FILE)
    data = _read(url)
    if data is None:
        return None
    try:
        return parse_record(StatusRecord, data, url)
    except RecordError:
        return None  # a garbled status is no status: the step runs again


def write_status(out: str, status: StepStatus, run_id: str, worker: str, message: str = "") -> None:
    rec = StatusRecord(status=status, run_id=run_id, worker=worker, message=message[:2000])
    store.atomic_write_text(store.join(out, STATUS_FILE), dumps_record(rec))


def read_lease(out: str) -> LeaseRecord | None:
    url = store.join(out, LEASE_FILE)
    data = _read(url)
    if data is None:
        return None
    try:
        return parse_record(LeaseRecord, data, url)
    except RecordError:
        return None


def read_step_record(out: str) -> StepRecord | None:
    url = store.join(out, STEP_RECORD_FILE)
    data = _read(url)
    if data is None:
        return None
    try:
        return parse_record(StepRecord, data, url)
    except RecordError:
        return None


def write_step_record(out: str, record: StepRecord) -> None:
    store.atomic_write_text(store.join(out, STEP_RECORD_FILE), dumps_record(record))


def acquire_lease(out: str, owner: str, run_id: str, timeout_s: float = LEASE_TIMEOUT_S) -> LeaseRecord:
    """Take the step's lease, or raise LeaseHeld when a live runner has it."""
    url = store.join(out, LEASE_FILE)
    now = utcnow()
    lease = LeaseRecord(owner=owner, run_id=run_id, acquired_at=now, heartbeat_at=now, timeout_s=timeout_s)
    body = dumps_record(lease).encode()
    if store.is_local(url) and _create_exclusive(url, body):
        return lease
    current = read_lease(out)
    if current is not None and current.owner != owner and not current.is_stale():
        raise LeaseHeld(current)
    store.atomic_write_bytes(url, body)
    mine = read_lease(out)
    if mine is None or mine.owner != owner:
        raise LeaseHeld(mine or lease)
    return lease


def _create_exclusive(url: str, body: bytes) -> bool:
    path = store.local_path(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as f:
        f.write(body)
    return True


def heartbeat(out: str, lease: LeaseRecord) -> LeaseRecord:
    fresh = lease.model_copy(update={"heartbeat_at": utcnow()})
    store.atomic_write_text(store.join(out, LEASE_FILE), dumps_record(fresh))
    return fresh


def release_lease(out: str, owner: str) -> None:
    current = read_lease(out)
    if current is not None and current.owner != owner:
        return  # someone took it over: not ours to delete
    fs, path = url_to_fs(store.join(out, LEASE_FILE))
    with contextlib.suppress(FileNotFoundError):
        fs.rm(path)


class Heartbeat:
    """Refreshes a lease from a daemon thread while the step function runs."""

    def __init__(self, out: str, lease: LeaseRecord, interval_s: float = HEARTBEAT_S) -> None:
        self._out, self._lease, self._interval = out, lease, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="openlab-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._lease = heartbeat(self._out, self._lease)
            except Exception:  # noqa: BLE001 - a missed beat is retried next interval; the lease may go stale
                continue


def check_prefix_writable(prefix: str) -> None:
    probe = store.join(prefix, f".openlab-probe-{uuid.uuid4().hex[:8]}")
    try:
        store.atomic_write_bytes(probe, b"ok")
        fs, path = url_to_fs(probe)
        fs.rm(path)
    except Exception as err:  # noqa: BLE001 - any failure means the prefix is unusable
        raise StorageError(f"storage prefix {prefix} is not writable: {type(err).__name__}: {err}") from None
