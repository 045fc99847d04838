"""Trainer throughput: tokens/s, model FLOP/s, and their ratio to a measured matmul peak (same process).

    .venv/bin/python benchmarks/bench_trainer.py                 # tiny_cpu config + a ~100M config
    .venv/bin/python benchmarks/bench_trainer.py --only tiny --steps 20
    .venv/bin/python benchmarks/bench_trainer.py --dtype bfloat16 --seq-len 1024 --batch 16   # on a GPU

Model FLOPs use the results formula (``3 x lm_flops_per_token x tokens``, Levanter's). The "peak" is a large
jitted square matmul in the compute dtype on the same device, timed between the train steps (median of
each), so both see the same load on a shared machine; the ratio says how close the whole train step gets to
what this device does on its best kernel. On a GPU with a known peak it also prints MFU against the datasheet
figure. The step is compiled (and run once) before timing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from runner.config import load_config, parse_config  # noqa: E402
from runner.flops import lm_flops_per_token, param_count, peak_flops_per_chip  # noqa: E402
from runner.optim import make_optimizer  # noqa: E402
from runner.parallel import make_mesh  # noqa: E402
from runner.trainstep import abstract_state, build_train_step, init_state, put_train_batch  # noqa: E402

TINY = Path(__file__).resolve().parents[1] / "experiments" / "speedrun" / "tiny_cpu" / "config.yaml"


def matmul_timer(dtype: str, n: int):  # type: ignore[no-untyped-def]
    """A compiled n^3 matmul; calling the result times one run and returns its FLOP/s."""
    a = jnp.ones((n, n), dtype)
    f = jax.jit(lambda x: x @ x)
    f(a).block_until_ready()

    def run() -> float:
        t = time.perf_counter()
        f(a).block_until_ready()
        return 2 * n**3 / (time.perf_counter() - t)

    return run


def config_100m(dtype: str, seq_len: int, batch: int) -> dict:
    return {
        "name": "bench_100m",
        "model": {"hidden_dim": 768, "intermediate_dim": 2048, "num_layers": 14, "num_heads": 12,
                  "num_kv_heads": 12, "seq_len": seq_len, "vocab_size": 264, "compute_dtype": dtype},
        "train": {"batch_size": batch, "steps": 100},
    }


def bench(cfg, steps: int, matmul) -> dict:  # type: ignore[no-untyped-def]
    """Timed steps interleaved with timed matmuls, so both see the same machine load (a shared CPU varies)."""
    mesh = make_mesh()
    tx, lr = make_optimizer(cfg.optimizer, cfg.schedule, cfg.train.steps)
    _, shardings = abstract_state(cfg, tx, mesh)
    state = init_state(cfg, tx, shardings)
    rng = np.random.default_rng(0)
    batch = rng.integers(0, 257, (cfg.train.batch_size, cfg.model.seq_len + 1)).astype(np.int32)
    dev_batch = put_train_batch(batch, cfg, mesh)
    t = time.perf_counter()
    step = build_train_step(cfg, tx, lr, shardings, mesh).lower(state, dev_batch).compile()
    compile_s = time.perf_counter() - t
    state, m = step(state, dev_batch)  # warm-up
    jax.block_until_ready(m)
    step_times, peaks = [], []
    for _ in range(steps):
        peaks.append(matmul())
        t = time.perf_counter()
        state, m = step(state, dev_batch)
        jax.block_until_ready((state, m))
        step_times.append(time.perf_counter() - t)
    peaks.append(matmul())
    dt = float(np.median(step_times))
    tokens = cfg.train.batch_size * cfg.model.seq_len
    flops = 3 * lm_flops_per_token(cfg.model) * tokens
    return {"params": param_count(cfg.model), "tokens_per_step": tokens, "step_s": dt, "tokens_per_s": tokens / dt,
            "model_flops_per_s": flops / dt, "peak": float(np.median(peaks)), "compile_s": compile_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["tiny", "100m"], default=None)
    ap.add_argument("--steps", type=int, default=None, help="timed steps (default: 20 tiny, 3 for 100M)")
    ap.add_argument("--dtype", default="float32", help="compute dtype of the 100M config and the matmul")
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--matmul", type=int, default=4096, help="side of the square peak matmul")
    args = ap.parse_args()

    device = jax.devices()[0]
    matmul = matmul_timer(args.dtype, args.matmul)
    datasheet = peak_flops_per_chip(device.device_kind)
    print(f"device: {device.platform} {device.device_kind} x{jax.device_count()}")
    runs = []
    if args.only in (None, "tiny"):
        runs.append(("tiny_cpu", load_config(TINY), args.steps or 20))
    if args.only in (None, "100m"):
        cfg = parse_config(config_100m(args.dtype, args.seq_len, args.batch))
        runs.append(("100m", cfg, args.steps or 3))
    for name, cfg, steps in runs:
        r = bench(cfg, steps, matmul)
        peak = r["peak"]
        print(f"{name}: measured matmul peak ({args.matmul}^3 {args.dtype}, median around the steps): "
              f"{peak / 1e9:,.1f} GFLOP/s")
        line = (f"{name}: params {r['params'] / 1e6:.1f}M, {r['tokens_per_step']} tok/step, "
                f"{r['step_s'] * 1e3:,.0f} ms/step, {r['tokens_per_s']:,.0f} tok/s, "
                f"model {r['model_flops_per_s'] / 1e9:,.1f} GFLOP/s = {100 * r['model_flops_per_s'] / peak:.1f}% "
                f"of measured matmul peak")
        if datasheet:
            line += f", MFU {100 * r['model_flops_per_s'] / (datasheet * jax.device_count()):.1f}% of {datasheet:.3g}"
        print(line + f" (compile {r['compile_s']:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
