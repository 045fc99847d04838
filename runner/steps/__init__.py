"""Step kinds shipped with openlab; each is a builder returning a :class:`runner.executor.Step`.

- :func:`ingest` (HF dataset by name+revision, local files, builtin corpus -> documents.jsonl)
- :func:`tokenize` (-> the trainer's tensorstore token cache in the step folder)
- :func:`fasttext_filter` (train a classifier, score, keep a fraction or threshold)
- :func:`train` (the trainer), :func:`eval_bpb` (BPB on chosen sets from the last checkpoint)
- :func:`lm_eval_step` (lm-evaluation-harness on local tasks; extra ``openlab[lmeval]``)
- :func:`speedrun_results` (validated results.json)

Heavy imports (JAX, fastText, lm-eval) happen inside the step functions, so planning stays fast.
"""

from runner.steps.eval_bpb import eval_bpb
from runner.steps.fasttext_filter import fasttext_filter
from runner.steps.ingest import ingest
from runner.steps.results import speedrun_results
from runner.steps.tokenize import tokenize
from runner.steps.train import train

__all__ = ["eval_bpb", "fasttext_filter", "ingest", "lm_eval_step", "speedrun_results", "tokenize", "train"]


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    if name == "lm_eval_step":  # its module imports numpy/pydantic only, but keep `import runner.steps` light
        from runner.steps.lm_eval_adapter import lm_eval_step

        return lm_eval_step
    raise AttributeError(name)
