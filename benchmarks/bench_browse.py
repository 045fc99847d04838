"""Data browser: first page of a 1 GB jsonl.zst shard, streamed (issue: first page in under 1 s).

Writes a ~1 GB (compressed) shard of poorly compressible documents to a temp dir once, then times the first
page, a later page reached by continuing the cursor, and the process's peak RSS, to show the shard is never
loaded whole. Usage: python benchmarks/bench_browse.py [--gb 1.0] [--keep PATH]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import zstandard

from leaderboard.browse.shards import Filter, ShardReader


def write_shard(path: Path, target_bytes: int) -> int:
    rng = np.random.default_rng(0)
    cctx = zstandard.ZstdCompressor(level=1)
    docs = 0
    with path.open("wb") as raw, cctx.stream_writer(raw) as out:
        while raw.tell() < target_bytes:
            lines = []
            for _ in range(1000):
                text = base64.b64encode(rng.bytes(int(rng.integers(500, 3000)))).decode()
                lines.append(json.dumps({"id": docs, "text": text, "attributes": {"quality": float(rng.random())}}))
                docs += 1
            out.write(("\n".join(lines) + "\n").encode())
    return docs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--keep", type=Path, default=None, help="reuse/keep the shard at this path")
    args = ap.parse_args()
    path = args.keep or Path(tempfile.mkdtemp()) / "big.jsonl.zst"
    if not path.exists():
        t = time.perf_counter()
        docs = write_shard(path, int(args.gb * 2**30))
        print(f"wrote {path} ({path.stat().st_size / 2**30:.2f} GiB, {docs:,} docs) in {time.perf_counter() - t:.1f} s")
    reader = ShardReader()
    t = time.perf_counter()
    first = reader.page(str(path), 0, 20)
    t_first = time.perf_counter() - t
    t = time.perf_counter()
    nxt = reader.page(str(path), 1, 20)
    t_next = time.perf_counter() - t
    t = time.perf_counter()
    filtered = reader.page(str(path), 0, 20, Filter.parse("quality>=0.99"))
    t_filter = time.perf_counter() - t
    t = time.perf_counter()
    deep = reader.page(str(path), 500, 20)
    t_deep = time.perf_counter() - t
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert len(first.documents) == 20 and first.has_next and len(nxt.documents) == 20 and len(deep.documents) == 20
    print(f"first page (20 docs):            {t_first * 1000:8.1f} ms")
    print(f"next page (cursor continues):    {t_next * 1000:8.1f} ms")
    print(f"first filtered page (q>=0.99):   {t_filter * 1000:8.1f} ms  ({filtered.scanned:,} docs read)")
    print(f"page 501 from the open cursor:   {t_deep * 1000:8.1f} ms")
    print(f"peak RSS: {rss_mib:.0f} MiB for a {path.stat().st_size / 2**30:.2f} GiB shard")
    if args.keep is None:
        os.unlink(path)


if __name__ == "__main__":
    main()
