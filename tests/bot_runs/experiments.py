"""Experiment files the tests commit to PR branches (they run inside real Ray jobs, from a git archive)."""

from __future__ import annotations

import json

# A real (tiny) CPU training run through the trainer: about 15 s on 2 cores.
TINY_SPEEDRUN = '''"""Tiny speedrun for the end-to-end test: a 1-layer byte-level Llama on the builtin corpus."""

from runner.config import parse_config
from runner.executor import Step, StepContext

CONFIG = parse_config({
    "name": "tiny_e2e",
    "track": "all",
    "description": "end-to-end test run",
    "model": {"hidden_dim": 32, "intermediate_dim": 64, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1,
              "seq_len": 32, "vocab_size": 264, "compute_dtype": "float32"},
    "train": {"batch_size": 4, "steps": 12, "log_every": 2},
    "eval": {"sets": [{"name": "val", "max_tokens": 2048}]},
    "tracking": {"mode": "disabled"},
})


def train(cfg, ctx: StepContext) -> dict:
    from runner.train import train as run_training

    results = run_training(cfg, ctx.output_path, run_id=ctx.run_id, progress=False)
    return {"bpb": results.bpb}


STEPS = [Step("speedrun/tiny_e2e", train, CONFIG, version="v1", kind="train")]
'''

# Writes a results file it was given (valid, invalid or hostile) without training: for the fault tests.
WRITE_RESULTS = '''"""Writes a prepared results.json (the fault tests' stand-in for a trainer)."""

import json
import os
from dataclasses import dataclass
from pathlib import Path

from runner.executor import Step, StepContext

RESULTS = {results!r}
MODE = {mode!r}


@dataclass(frozen=True)
class Fault:
    mode: str


def write(cfg: Fault, ctx: StepContext) -> dict:
    out = Path(ctx.output_path)
    out.mkdir(parents=True, exist_ok=True)
    if MODE == "missing":
        (out / "other.txt").write_text("no results here")
        return {{}}
    if MODE == "sleep":
        import time

        time.sleep(300)
    text = RESULTS
    if MODE == "valid":
        data = json.loads(RESULTS)
        data["provenance"]["git_sha"] = os.environ.get("OPENLAB_GIT_COMMIT")
        text = json.dumps(data)
    (out / "results.json").write_text(text)
    with open(out / "metrics.jsonl", "w") as f:
        for step in range(1, 11):
            f.write(json.dumps({{"step": step, "train/loss": 5.0 / step}}) + "\\n")
    return {{}}


STEPS = [Step("speedrun/fault", write, Fault(MODE), version="v1")]
'''


def write_results_experiment(results: str, mode: str) -> str:
    return WRITE_RESULTS.format(results=results, mode=mode)


def hostile_results_json(name: str, description: str) -> str:
    from tests.leaderboard.factory import make_results

    r = make_results(3, name="placeholder", run_id="hostile-run")
    data = json.loads(r.model_dump_json())
    data["name"] = name
    data["description"] = description
    data["eval"] = {"<b>val</b>|x": data["eval"][next(iter(data["eval"]))]}
    data["tracking"] = {"wandb_mode": "online", "wandb_url": "javascript:alert(1)", "wandb_run_id": "x"}
    data["attestation"] = None
    return json.dumps(data)
