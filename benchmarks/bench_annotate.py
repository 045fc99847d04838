"""Annotation throughput: the ``local`` engine (our JAX model) and the ``openai`` engine against
``openlab annotate-server``, at 512-token documents.

Prints documents/s, tokens/s (prompt + document + chat template, all read by the model) and the model FLOP/s
(2 x params x tokens: a forward pass) as a fraction of a measured matmul peak, the trainer benchmark's method.
The first batch (compile) is excluded. Usage:

    .venv/bin/python benchmarks/bench_annotate.py --docs 32 --batch 8 [--openai]
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402
import jax  # noqa: E402

from benchmarks.bench_trainer import matmul_timer  # noqa: E402
from runner.annotation.labels import render_prompt  # noqa: E402
from runner.data.corpus import builtin_documents  # noqa: E402
from runner.steps.annotate import truncate  # noqa: E402

PROMPT = ("Below is a section of the Python documentation. Rate how much it is about classes and objects, from 0 "
          "(not at all) to 5 (entirely).\n\nSection:\n{example}\n\nReply with the score only.")


def documents(pre, n: int, tokens: int) -> list[str]:  # type: ignore[no-untyped-def]
    texts = [t for t in builtin_documents("pydoc", "train") if len(pre.encode(t)) >= tokens]
    return [truncate(pre, texts[i % len(texts)], tokens) for i in range(n)]


def bench_local(args: argparse.Namespace) -> dict:
    from runner.annotation.local import LocalEngine

    engine = LocalEngine(batch_size=args.batch)
    prompts = [render_prompt(PROMPT, d) for d in documents(engine.pre, args.docs + args.batch, args.tokens)]
    engine.annotate(prompts[: args.batch])  # compile
    peak = matmul_timer("float32" if jax.default_backend() == "cpu" else "bfloat16", args.matmul)
    peaks = [peak()]
    t = time.perf_counter()
    anns = engine.annotate(prompts[args.batch :])
    dt = time.perf_counter() - t
    peaks.append(peak())
    tokens = sum(a.tokens for a in anns)
    flops = 2 * engine.pre.param_count() * tokens
    return {"docs_per_s": len(anns) / dt, "tokens_per_s": tokens / dt, "flops_per_s": flops / dt,
            "peak": max(peaks), "device": jax.devices()[0].device_kind}


def bench_openai(args: argparse.Namespace) -> dict:
    from runner.annotation.openai_engine import OpenAIEngine
    from runner.pretrained import read_header_cached

    pre = read_header_cached()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "runner.cli", "annotate-server", "--port", str(port)])
    base = f"http://127.0.0.1:{port}/v1"
    try:
        while True:
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(1)
        engine = OpenAIEngine(base, "smollm2", concurrency=4)
        prompts = [render_prompt(PROMPT, d) for d in documents(pre, args.docs + 1, args.tokens)]
        engine.annotate(prompts[:1])  # compile
        t = time.perf_counter()
        anns = engine.annotate(prompts[1:])
        dt = time.perf_counter() - t
    finally:
        proc.terminate()
        proc.wait()
    tokens = sum(a.tokens for a in anns)
    return {"docs_per_s": len(anns) / dt, "tokens_per_s": tokens / dt,
            "flops_per_s": 2 * pre.metadata["param_count"] * tokens / dt}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=32)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=512, help="tokens per document (before the prompt)")
    ap.add_argument("--matmul", type=int, default=2048)
    ap.add_argument("--openai", action="store_true", help="also through the openai engine and a local server")
    args = ap.parse_args()
    r = bench_local(args)
    print(f"local engine on {r['device']}: {r['docs_per_s']:.2f} docs/s, {r['tokens_per_s']:,.0f} tokens/s, "
          f"{r['flops_per_s'] / 1e9:,.1f} GFLOP/s = {100 * r['flops_per_s'] / r['peak']:.1f}% of measured matmul "
          f"peak {r['peak'] / 1e9:,.1f} GFLOP/s")
    if args.openai:
        o = bench_openai(args)
        print(f"openai engine -> annotate-server: {o['docs_per_s']:.2f} docs/s, {o['tokens_per_s']:,.0f} tokens/s, "
              f"{o['flops_per_s'] / 1e9:,.1f} GFLOP/s")


if __name__ == "__main__":
    main()
