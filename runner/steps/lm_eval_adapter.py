"""lm-evaluation-harness adapter for our JAX model: ``loglikelihood``, ``loglikelihood_rolling``,
``generate_until``.

The adapter's logic (tokenizing, truncating to the context window, scoring continuations, rolling windows,
greedy decoding with stop strings) depends only on a :class:`Scorer`, so it is tested without the harness. The
harness itself (``lm-eval``, which pulls torch) is the optional extra ``openlab[lmeval]``; :func:`run_lm_eval`
imports it only when a step runs, with local JSON tasks and the Hub offline.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict

from runner import store
from runner.config import RunConfig
from runner.data.tokenizer import Tokenizer
from runner.executor import Step, StepContext


class Scorer(Protocol):
    window: int  # tokens of context the model sees

    def score(self, ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """For ids[1:]: log p(ids[t] | ids[:t]) and whether ids[t] is the greedy choice (len(ids) <= window+1)."""
        ...

    def argmax_next(self, ids: Sequence[int]) -> int:
        """The most likely token after ``ids`` (len(ids) <= window)."""
        ...


class JaxScorer:
    """Our Transformer on its params; one compiled shape (window+1), right-padded (causal, so harmless)."""

    def __init__(self, params: Any, model_cfg: Any) -> None:
        import jax

        from runner.model import Transformer

        self.window = model_cfg.seq_len
        self.params = params

        @partial(jax.jit)
        def _fwd(params: Any, ids: Any) -> tuple[Any, Any]:
            logits = Transformer(model_cfg).apply({"params": params}, ids[:, :-1])
            logp = jax.nn.log_softmax(logits, axis=-1)
            tgt = ids[:, 1:]
            return jax.numpy.take_along_axis(logp, tgt[..., None], axis=-1)[..., 0], logits.argmax(-1) == tgt

        @partial(jax.jit)
        def _argmax(params: Any, ids: Any) -> Any:
            return Transformer(model_cfg).apply({"params": params}, ids).argmax(-1)[0]

        self._fwd, self._argmax = _fwd, _argmax

    def score(self, ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        n = len(ids)
        padded = np.zeros((1, self.window + 1), dtype=np.int32)
        padded[0, :n] = ids
        logp, greedy = self._fwd(self.params, padded)
        return np.asarray(logp)[0, : n - 1], np.asarray(greedy)[0, : n - 1]

    def argmax_next(self, ids: Sequence[int]) -> int:
        padded = np.zeros((1, self.window), dtype=np.int32)
        padded[0, : len(ids)] = ids
        return int(np.asarray(self._argmax(self.params, padded))[len(ids) - 1])


def _base() -> type:
    try:
        from lm_eval.api.model import LM

        return LM
    except ImportError:
        return object


class OpenlabLM(_base()):  # type: ignore[misc]
    """An ``lm_eval.api.model.LM`` when the harness is installed; the same methods either way."""

    def __init__(self, scorer: Scorer, tokenizer: Tokenizer, eot_id: int, max_gen_toks: int = 64) -> None:
        if _base() is not object:
            super().__init__()
        self.scorer, self.tok, self.eot, self.max_gen_toks = scorer, tokenizer, eot_id, max_gen_toks

    def _continuation(self, context: str, continuation: str) -> tuple[float, bool]:
        ctx = [self.eot, *self.tok.encode(context)]
        cont = self.tok.encode(continuation)
        full = (ctx + cont)[
            -(self.scorer.window + 1) :
        ]  # keep the whole continuation, drop the oldest context
        logp, greedy = self.scorer.score(full)
        k = min(len(cont), len(logp))
        return float(logp[-k:].sum()) if k else 0.0, bool(greedy[-k:].all()) if k else True

    def loglikelihood(self, requests: Sequence[Any]) -> list[tuple[float, bool]]:
        return [self._continuation(*r.args[:2]) for r in requests]

    def loglikelihood_rolling(self, requests: Sequence[Any]) -> list[float]:
        """Whole-text log-likelihood in disjoint windows, the first token conditioned on end-of-text only."""
        out = []
        w = self.scorer.window
        for r in requests:
            ids = [self.eot, *self.tok.encode(r.args[0])]
            total = 0.0
            for start in range(0, len(ids) - 1, w):
                logp, _ = self.scorer.score(ids[start : start + w + 1])
                total += float(logp.sum())
            out.append(total)
        return out

    def generate_until(self, requests: Sequence[Any]) -> list[str]:
        out = []
        for r in requests:
            context, kwargs = r.args[0], (r.args[1] if len(r.args) > 1 else {})
            until = [u for u in kwargs.get("until", []) if u]
            ids = [self.eot, *self.tok.encode(context)]
            gen: list[int] = []
            text = ""
            for _ in range(int(kwargs.get("max_gen_toks", self.max_gen_toks))):
                nxt = self.scorer.argmax_next((ids + gen)[-self.scorer.window :])
                if nxt == self.eot:
                    break
                gen.append(nxt)
                text = self.tok.decode(gen)
                if any(u in text for u in until):
                    break
            for u in until:
                text = text.split(u)[0]
            out.append(text)
        return out


class LmEvalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    train_dir: str
    run: RunConfig
    tasks_dir: str
    tasks: list[str]
    limit: int | None = None
    num_fewshot: int = 0


def run_lm_eval(cfg: LmEvalConfig, ctx: StepContext) -> dict:
    try:
        import lm_eval
        from lm_eval.tasks import TaskManager
    except ImportError:
        from runner.errors import OpenlabError

        raise OpenlabError("lm-eval is not installed: pip install 'openlab[lmeval]'") from None
    from runner.data import load_tokenizer
    from runner.steps.eval_bpb import load_params

    tok = load_tokenizer(cfg.run.data.tokenizer)
    lm = OpenlabLM(JaxScorer(load_params(cfg.train_dir, cfg.run), cfg.run.model), tok, eot_id=tok.eos_id)
    res = lm_eval.simple_evaluate(
        model=lm,
        tasks=cfg.tasks,
        num_fewshot=cfg.num_fewshot,
        limit=cfg.limit,
        task_manager=TaskManager(include_path=cfg.tasks_dir),
    )
    metrics = json.loads(json.dumps(res["results"], default=str))
    store.atomic_write_text(store.join(ctx.output_path, "lm_eval.json"), json.dumps(metrics, indent=2) + "\n")
    return metrics


def lm_eval_step(
    name: str, trained: Step, tasks_dir: str, tasks: list[str], *, version: str = "v1", **kw: Any
) -> Step:
    cfg = LmEvalConfig(
        train_dir=trained.output(), run=trained.config.run, tasks_dir=tasks_dir, tasks=tasks, **kw
    )
    return Step(name, run_lm_eval, cfg, version=version, kind="lm_eval")
