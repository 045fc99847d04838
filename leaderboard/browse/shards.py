"""Streaming, page-by-page reading of document shards: jsonl, jsonl.gz, jsonl.zst and parquet.

Nothing is loaded whole: a page is read by streaming from the start (or from where the previous page of the
same shard and filter stopped, kept in a small cursor cache), so the first page of a 1 GB ``.jsonl.zst``
arrives after reading only that page's bytes. A corrupt or truncated shard yields the documents read so far
and an error line naming the shard and the line, never an exception to the page.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import operator
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import fsspec
from pydantic import BaseModel

SHARD_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".jsonl.zstd", ".parquet", ".json.gz", ".json.zst")
TEXT_KEYS = ("text", "content", "document")
MAX_TEXT_CHARS = 20_000


def is_shard(name: str) -> bool:
    return name.endswith(SHARD_SUFFIXES)


class Document(BaseModel):
    index: int
    id: str | None
    text: str
    truncated: bool
    attributes: dict[str, Any]


class Page(BaseModel):
    shard: str
    page: int
    page_size: int
    documents: list[Document]
    has_next: bool
    scanned: int
    error: str | None = None
    filter: str | None = None


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "!=": operator.ne,
    "==": operator.eq,
    ">": operator.gt,
    "<": operator.lt,
}
_FILTER = re.compile(r"^\s*([A-Za-z0-9_.:/-]+)\s*(>=|<=|!=|==|>|<)\s*(.+?)\s*$")


@dataclass(frozen=True)
class Filter:
    """``attribute OP value``, e.g. ``quality>=0.5`` or ``lang==en``; dotted names reach nested attributes."""

    key: str
    op: str
    value: float | str

    @classmethod
    def parse(cls, text: str) -> Filter:
        m = _FILTER.match(text)
        if not m:
            raise ValueError(
                f"filter {text!r}: write it as ATTRIBUTE OP VALUE with OP one of >= <= > < == !="
            )
        key, op, raw = m.groups()
        try:
            value: float | str = float(raw)
        except ValueError:
            value = raw.strip("'\"")
        return cls(key, op, value)

    def matches(self, attrs: dict[str, Any]) -> bool:
        v = attrs.get(self.key)
        if v is None:
            return False
        if isinstance(self.value, float):
            if (
                isinstance(v, bool)
                or not isinstance(v, int | float)
                or (isinstance(v, float) and math.isnan(v))
            ):
                return False
            return _OPS[self.op](float(v), self.value)
        return _OPS[self.op](str(v), self.value)

    def __str__(self) -> str:
        return (
            f"{self.key}{self.op}{self.value:g}"
            if isinstance(self.value, float)
            else f"{self.key}{self.op}{self.value}"
        )


def _flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Nested attributes become dotted keys: {"attributes": {"q": 1}} -> {"attributes.q": 1}."""
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(obj, str | int | float | bool) or obj is None:
        return {prefix: obj}
    return {prefix: json.dumps(obj, default=str)[:200]}


def to_document(index: int, row: dict[str, Any]) -> Document:
    text_key = next((k for k in TEXT_KEYS if isinstance(row.get(k), str)), None)
    text = row.get(text_key, "") if text_key else ""
    rest = {k: v for k, v in row.items() if k not in (text_key, "id", "attributes")}
    attrs = _flatten(rest)
    # Dolma-style rows nest scores under "attributes": show them by their own names.
    if isinstance(row.get("attributes"), dict):
        attrs.update(_flatten(row["attributes"]))
    doc_id = row.get("id")
    return Document(
        index=index,
        id=None if doc_id is None else str(doc_id),
        text=text[:MAX_TEXT_CHARS],
        truncated=len(text) > MAX_TEXT_CHARS,
        attributes=attrs,
    )


class ShardError(Exception):
    pass


CHUNK = 1 << 20


def _zstd_chunks(raw: io.BufferedIOBase) -> Iterator[bytes]:
    """Decompress frame by frame so a truncated last frame is noticed (stream readers hide it)."""
    import zstandard

    dctx = zstandard.ZstdDecompressor()
    obj = dctx.decompressobj()
    in_frame = False
    try:
        while chunk := raw.read(CHUNK):
            while chunk:
                in_frame = True
                yield obj.decompress(chunk)
                if obj.eof:
                    chunk, in_frame = obj.unused_data, False
                    obj = dctx.decompressobj()
                else:
                    chunk = b""
    except zstandard.ZstdError as err:
        raise ShardError(f"corrupt zstd data ({err})") from None
    if in_frame:
        raise ShardError("truncated zstd data: the last frame is incomplete")


def _gzip_chunks(raw: io.BufferedIOBase) -> Iterator[bytes]:
    try:
        with gzip.GzipFile(fileobj=raw) as gz:
            while chunk := gz.read(CHUNK):
                yield chunk
    except (EOFError, OSError, gzip.BadGzipFile) as err:
        raise ShardError(f"truncated or corrupt gzip data ({err})") from None


def _plain_chunks(raw: io.BufferedIOBase) -> Iterator[bytes]:
    while chunk := raw.read(CHUNK):
        yield chunk


def _lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    rest = b""
    for chunk in chunks:
        rest += chunk
        *lines, rest = rest.split(b"\n")
        yield from lines
    if rest:
        yield rest


def _jsonl_rows(url: str) -> Iterator[dict[str, Any]]:
    with fsspec.open(url, "rb") as raw:
        if url.endswith(".gz"):
            chunks = _gzip_chunks(raw)
        elif url.endswith((".zst", ".zstd")):
            chunks = _zstd_chunks(raw)
        else:
            chunks = _plain_chunks(raw)
        line_no = 0
        try:
            for line in _lines(chunks):
                line_no += 1
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError as err:
                    raise ShardError(f"line {line_no}: not JSON ({err})") from None
                if not isinstance(row, dict):
                    raise ShardError(f"line {line_no}: expected a JSON object")
                yield row
        except ShardError as err:
            msg = str(err)
            raise ShardError(msg if msg.startswith("line ") else f"after line {line_no}: {msg}") from None


def _parquet_rows(url: str) -> Iterator[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with fsspec.open(url, "rb") as f:
            pf = pq.ParquetFile(f)
            for batch in pf.iter_batches(batch_size=256):
                yield from batch.to_pylist()
    except (pa.ArrowException, OSError) as err:
        raise ShardError(f"unreadable parquet ({err})") from None


def rows(url: str) -> Iterator[dict[str, Any]]:
    if url.endswith(".parquet"):
        return _parquet_rows(url)
    if is_shard(url):
        return _jsonl_rows(url)
    raise ShardError("not a document shard (jsonl, jsonl.gz, jsonl.zst or parquet)")


class _Cursor:
    def __init__(self, url: str, flt: Filter | None) -> None:
        self.it = rows(url)
        self.pending: dict[str, Any] | None = None  # read one past the last page, not yet handed out
        self.flt = flt
        self.matched = 0  # documents (after the filter) handed out so far
        self.scanned = 0
        self.lock = threading.Lock()


class ShardReader:
    """Pages through shards, remembering where each (shard, filter) stream stopped."""

    def __init__(self, max_cursors: int = 32) -> None:
        self._cursors: OrderedDict[tuple[str, str], _Cursor] = OrderedDict()
        self._max = max_cursors
        self._lock = threading.Lock()

    def _cursor(self, url: str, flt: Filter | None, start: int) -> _Cursor:
        key = (url, str(flt) if flt else "")
        with self._lock:
            cur = self._cursors.pop(key, None)
            if cur is None or cur.matched > start:
                cur = _Cursor(url, flt)
            self._cursors[key] = cur
            while len(self._cursors) > self._max:
                self._cursors.popitem(last=False)
            return cur

    def page(self, url: str, page: int = 0, page_size: int = 20, flt: Filter | None = None) -> Page:
        start = page * page_size
        cur = self._cursor(url, flt, start)
        docs: list[Document] = []
        error = None
        with cur.lock:
            try:
                while True:
                    row, cur.pending = (
                        (cur.pending, None) if cur.pending is not None else (next(cur.it, None), None)
                    )
                    if row is None:
                        has_next = False
                        break
                    cur.scanned += 1
                    doc = to_document(cur.scanned - 1, row)
                    if flt is not None and not flt.matches(doc.attributes):
                        continue
                    cur.matched += 1
                    if cur.matched <= start:
                        continue
                    if len(docs) == page_size:
                        # Read one past the page to know there is a next; keep it for the next page.
                        cur.matched -= 1
                        cur.scanned -= 1
                        cur.pending = row
                        has_next = True
                        break
                    docs.append(doc)
            except ShardError as err:
                error = str(err)
                has_next = False
                with self._lock:
                    self._cursors.pop((url, str(flt) if flt else ""), None)
        return Page(
            shard=url,
            page=page,
            page_size=page_size,
            documents=docs,
            has_next=has_next,
            scanned=cur.scanned,
            error=error,
            filter=str(flt) if flt else None,
        )
