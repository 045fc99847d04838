"""Shard paging: every format, filters, corrupt and truncated shards, and path confinement."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from leaderboard.browse.paths import PathRefused, confine
from leaderboard.browse.shards import Filter, ShardReader

DOCS = [
    {"id": f"d{i}", "text": f"document number {i}", "attributes": {"quality": i / 100}} for i in range(95)
]


def write_shards(root: Path) -> dict[str, Path]:
    lines = "".join(json.dumps(d) + "\n" for d in DOCS).encode()
    paths = {
        "jsonl": root / "a.jsonl",
        "gz": root / "a.jsonl.gz",
        "zst": root / "a.jsonl.zst",
        "parquet": root / "a.parquet",
    }
    paths["jsonl"].write_bytes(lines)
    paths["gz"].write_bytes(gzip.compress(lines))
    paths["zst"].write_bytes(zstandard.ZstdCompressor().compress(lines))
    pq.write_table(
        pa.Table.from_pylist(
            [{"id": d["id"], "text": d["text"], "quality": d["attributes"]["quality"]} for d in DOCS]
        ),
        paths["parquet"],
    )
    return paths


@pytest.mark.parametrize("fmt", ["jsonl", "gz", "zst", "parquet"])
def test_pages_cover_every_document_once(tmp_path: Path, fmt: str) -> None:
    path = str(write_shards(tmp_path)[fmt])
    reader = ShardReader()
    seen: list[str] = []
    page = 0
    while True:
        p = reader.page(path, page, 20)
        assert p.error is None
        seen += [d.id for d in p.documents]
        if not p.has_next:
            break
        page += 1
    assert seen == [d["id"] for d in DOCS]
    assert page == 4  # 95 documents in pages of 20
    # Random access back to an earlier page restarts the stream and still gives the same documents.
    assert [d.id for d in reader.page(path, 1, 20).documents] == [f"d{i}" for i in range(20, 40)]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_filter_on_attributes(tmp_path: Path, fmt: str) -> None:
    path = str(write_shards(tmp_path)[fmt])
    p = ShardReader().page(path, 0, 100, Filter.parse("quality>=0.9"))
    assert [d.id for d in p.documents] == [f"d{i}" for i in range(90, 95)]
    assert all(d.attributes["quality"] >= 0.9 for d in p.documents)


def test_filter_syntax_error_names_the_filter() -> None:
    with pytest.raises(ValueError, match="ATTRIBUTE OP VALUE"):
        Filter.parse("quality is high")


def test_corrupt_line_reports_line_and_keeps_earlier_documents(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "ok"}\n{"text": "ok too"}\n{not json\n')
    p = ShardReader().page(str(path), 0, 10)
    assert [d.text for d in p.documents] == ["ok", "ok too"]
    assert p.error and "line 3" in p.error


def test_truncated_zstd_is_an_error_not_a_crash(tmp_path: Path) -> None:
    lines = "".join(json.dumps(d) + "\n" for d in DOCS).encode()
    blob = zstandard.ZstdCompressor().compress(lines)
    path = tmp_path / "cut.jsonl.zst"
    path.write_bytes(blob[: len(blob) // 2])
    p = ShardReader().page(str(path), 0, 200)
    assert p.error is not None
    assert not p.has_next


def test_truncated_gzip_is_an_error_not_a_crash(tmp_path: Path) -> None:
    blob = gzip.compress("".join(json.dumps(d) + "\n" for d in DOCS).encode())
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(blob[: len(blob) - 30])
    p = ShardReader().page(str(path), 0, 200)
    assert p.error is not None and "truncated" in p.error


@pytest.mark.parametrize(
    "bad",
    [
        "../etc/passwd",
        "/etc/passwd",
        "a/../../x",
        "%2e%2e/x",
        "%252e%252e/x",
        "file:///etc/passwd",
        "gs://other/x",
        "..\\x",
        "//evil/x",
        "a\x00b",
        "~/x",
    ],
)
def test_paths_outside_the_prefix_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(PathRefused):
        confine(str(tmp_path), bad)


def test_symlink_out_of_the_prefix_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    os.symlink("/etc", store / "link")
    with pytest.raises(PathRefused, match="symbolic link"):
        confine(str(store), "link/passwd")


def test_inside_paths_resolve(tmp_path: Path) -> None:
    assert confine(str(tmp_path), "a/b.jsonl") == f"{tmp_path}/a/b.jsonl"
    assert confine("memory://store", "x/y") == "memory://store/x/y"
    assert confine(str(tmp_path), "") == str(tmp_path)
