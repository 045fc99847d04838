"""EMA of the weights as an optimizer option (the recurrence in the optimizer state, evaluation with it), and a
weighted data mixture: its batches, and one real training run that uses both."""

from __future__ import annotations

import json
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from runner.config import OptimizerConfig, RunConfig, ScheduleConfig
from runner.optim import eval_params, make_optimizer


def test_ema_follows_its_recurrence_and_is_what_eval_reads() -> None:
    opt = OptimizerConfig(ema_beta=0.9, weight_decay=0.0, max_grad_norm=None)
    tx, _ = make_optimizer(opt, ScheduleConfig(name="constant"), steps=10)
    params = {"w": jnp.arange(4.0).reshape(2, 2)}
    state = tx.init(params)
    ema = np.asarray(params["w"])
    for k in range(3):
        grads = {"w": jnp.full((2, 2), float(k + 1))}
        updates, state = tx.update(grads, state, params)
        params = {"w": params["w"] + updates["w"]}
        ema = 0.9 * ema + 0.1 * np.asarray(params["w"])
    got = eval_params({"params": params, "opt_state": state})["w"]
    np.testing.assert_allclose(np.asarray(got), ema, rtol=1e-6)
    assert not np.allclose(np.asarray(got), np.asarray(params["w"]))
    plain, _ = make_optimizer(OptimizerConfig(), ScheduleConfig(), steps=10)
    assert eval_params({"params": params, "opt_state": plain.init(params)}) is params


def _texts(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    out = []
    for name, words in (("lower", ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog"]),
                        ("upper", ["THE", "QUICK", "BROWN", "FOX", "JUMPS", "OVER", "A", "LAZY", "DOG"])):
        p = tmp_path / f"{name}.jsonl"
        p.write_text("".join(json.dumps({"text": " ".join(rng.choice(words, 60))}) + "\n" for _ in range(150)))
        out.append(p)
    return out[0], out[1]


def test_mixture_batches_hold_each_source_in_proportion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from runner.config import DataConfig
    from runner.data import load_split
    from runner.data.mixture import MixtureBatches, row_counts
    from runner.errors import DataError

    monkeypatch.setenv("OPENLAB_CACHE_DIR", str(tmp_path / "cache"))
    lower, upper = _texts(tmp_path)
    data = DataConfig.model_validate({"mixture": [{"name": "lower", "source": {"paths": [str(lower)]}, "weight": 3},
                                                  {"name": "upper", "source": {"paths": [str(upper)]}, "weight": 1}]})
    assert data.weights() == {"lower": 0.75, "upper": 0.25} and row_counts(data.weights(), 10) == {"lower": 8, "upper": 2}
    parts = {c.name: load_split(data, "train", source=c.source) for c in data.mixture or []}
    mb = MixtureBatches.build(parts, data.weights(), seq_len=16, batch_size=8, seed=0)
    b = mb.batch(3)
    assert b.shape == (8, 17) and np.array_equal(b, mb.batch(3)) and not np.array_equal(b, mb.batch(4))
    is_upper = (b >= ord("A")) & (b <= ord("Z"))
    is_lower = (b >= ord("a")) & (b <= ord("z"))
    assert [bool(is_lower[i].any() and not is_upper[i].any()) for i in range(8)] == [True] * 6 + [False] * 2
    with pytest.raises(DataError, match="'upper' .* gets no row of a 2-sequence batch"):
        MixtureBatches.build(parts, {"lower": 0.9, "upper": 0.1}, seq_len=16, batch_size=2, seed=0)
    with pytest.raises(ValueError, match="give source or mixture, not both"):
        DataConfig.model_validate({"source": {"paths": [str(lower)]}, "mixture": data.model_dump()["mixture"]})


def test_training_on_a_mixture_evaluates_the_average(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from runner.train import train

    monkeypatch.setenv("OPENLAB_CACHE_DIR", str(tmp_path / "cache"))
    lower, upper = _texts(tmp_path)
    base = {
        "model": {"hidden_dim": 32, "intermediate_dim": 64, "num_layers": 2, "num_heads": 4, "num_kv_heads": 2,
                  "seq_len": 32, "vocab_size": 264, "compute_dtype": "float32"},
        "train": {"batch_size": 8, "steps": 6, "log_every": 1},
        "data": {"mixture": [{"name": "lower", "source": {"paths": [str(lower)]}, "weight": 1},
                             {"name": "upper", "source": {"paths": [str(upper)]}, "weight": 1}]},
        "optimizer": {"learning_rate": 1e-2},
        "eval": {"sets": [{"name": "lower", "source": {"paths": [str(lower)]}, "max_tokens": 1024}]},
        "tracking": {"mode": "disabled"},
    }
    # beta close to 1 keeps the average at the initial weights: the trained weights learn (the train loss
    # falls) while the reported BPB stays an untrained model's (~log2 264 = 8.04), so eval reads the average.
    cfg = {**base, "optimizer": {**base["optimizer"], "ema_beta": 0.999999}}
    out = tmp_path / "ema"
    res = train(RunConfig.model_validate(cfg), str(out))
    losses = [m["train/loss"] for m in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())
              if "train/loss" in m]
    assert res.config.optimizer.ema_beta == 0.999999 and res.config.data.weights() == {"lower": 0.5, "upper": 0.5}
    assert losses[-1] < losses[0] - 0.5  # nats: the live weights moved a lot (a live eval reads ~5.8 BPB)
    assert res.bpb == pytest.approx(8.04, abs=0.2)
