"""Storage through fsspec: local paths, ``memory://`` in tests, ``gs://`` (gcsfs) in production.

Writes are atomic: a local file is written beside its target and renamed over it; an object store
(GCS, memory) makes a single-object upload visible whole, so a reader never sees half a file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import fsspec
from fsspec.core import url_to_fs


def is_local(url: str) -> bool:
    return "://" not in url or url.startswith("file://")


def local_path(url: str) -> Path:
    return Path(url.removeprefix("file://"))


def join(base: str, *parts: str) -> str:
    out = base.rstrip("/")
    for p in parts:
        out = f"{out}/{p.strip('/')}"
    return out


def atomic_write_bytes(url: str, data: bytes) -> None:
    if is_local(url):
        path = local_path(url)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return
    fs, path = url_to_fs(url)
    fs.pipe_file(path, data)


def atomic_write_text(url: str, text: str) -> None:
    atomic_write_bytes(url, text.encode("utf-8"))


def read_bytes(url: str) -> bytes:
    with fsspec.open(url, "rb") as f:
        return f.read()


def read_text(url: str) -> str:
    return read_bytes(url).decode("utf-8")


def exists(url: str) -> bool:
    fs, path = url_to_fs(url)
    return fs.exists(path)
