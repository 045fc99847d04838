"""Tracking: our own ``metrics.jsonl`` (authoritative), a W&B run, and a progress bar on a terminal.

- ``metrics.jsonl``: one JSON object per line, ``{"step": N, "time": ISO-8601, <key>: value, ...}`` with keys
  ``train/loss``, ``train/lr``, ``train/grad_norm``, ``eval/<set>/bpb``, ``eval/<set>/loss``,
  ``throughput/tokens_per_second``, ``throughput/mfu`` (percent, as Levanter logs it; absent on CPU). After a
  resume from step S, lines past S (logged by the killed run after its last checkpoint) are dropped, so the
  file reads as one uninterrupted run.
- W&B: mode ``auto`` means online when ``WANDB_API_KEY`` is set and offline otherwise; ``WANDB_MODE`` in the
  environment (``disabled`` in tests) wins over the config. The run id is ours (``wandb.init(id=run_id,
  resume="allow")``), so the URL ``https://wandb.ai/<entity>/<project>/runs/<run_id>`` is known before upload.
- The progress bar (tqdm: step, loss, tokens/s, ETA) shows when stderr is a TTY, or when asked.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.config import RunConfig
from runner.schema import Tracking

log = logging.getLogger(__name__)


def resolve_mode(cfg_mode: str) -> str:
    env = os.environ.get("WANDB_MODE")
    if env in ("online", "offline", "disabled"):
        return env
    if env == "dryrun":
        return "offline"
    if cfg_mode != "auto":
        return cfg_mode
    return "online" if os.environ.get("WANDB_API_KEY") else "offline"


class Tracker:
    def __init__(
        self,
        out: Path,
        cfg: RunConfig,
        run_id: str,
        *,
        start_step: int,
        progress: bool | None,
        enabled: bool = True,
    ) -> None:
        self.enabled = enabled
        self.cfg = cfg
        self.run_id = run_id
        self.mode = resolve_mode(cfg.tracking.mode) if enabled else "disabled"
        self.path = out / "metrics.jsonl"
        self._wandb: Any = None
        self._bar: Any = None
        if not enabled:
            return
        self._truncate(start_step)
        self._file = self.path.open("a", encoding="utf-8")
        if self.mode != "disabled":
            self._init_wandb(out)
        show = sys.stderr.isatty() if progress is None else progress
        if show:
            from tqdm import tqdm

            self._bar = tqdm(total=cfg.train.steps, initial=start_step, unit="step", dynamic_ncols=True)

    def _truncate(self, start_step: int) -> None:
        if not self.path.exists():
            return
        keep = []
        if start_step > 0:
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line torn by a kill
                step = rec.get("step", 0)
                # The final eval is always re-run (and re-logged) when resuming at the last step.
                final_eval = step == self.cfg.train.steps and any(k.startswith("eval/") for k in rec)
                if step <= start_step and not final_eval:
                    keep.append(line)
        self.path.write_text("".join(line + "\n" for line in keep), encoding="utf-8")

    def _init_wandb(self, out: Path) -> None:
        import wandb

        t = self.cfg.tracking
        kwargs = dict(id=self.run_id, project=t.project, entity=t.entity, name=self.cfg.name, dir=str(out),
                      config=self.cfg.model_dump(mode="json"), resume="allow")
        try:
            self._wandb = wandb.init(mode=self.mode, **kwargs)
        except Exception as err:  # a bad key or no network must not lose the run: keep it offline instead
            if self.mode != "online":
                raise
            log.warning("wandb online init failed (%s); logging offline under %s/wandb", err, out)
            self.mode = "offline"
            self._wandb = wandb.init(mode="offline", **kwargs)

    def log(self, step: int, metrics: dict[str, float | None]) -> None:
        if not self.enabled:
            return
        clean = {k: v for k, v in metrics.items() if v is not None}
        rec = {"step": step, "time": datetime.now(UTC).isoformat(timespec="milliseconds"), **clean}
        self._file.write(json.dumps(rec) + "\n")
        self._file.flush()
        if self._wandb is not None:
            self._wandb.log(clean, step=step)

    def progress(self, step: int, loss: float | None, tokens_per_second: float | None) -> None:
        if self._bar is None:
            return
        self._bar.n = step
        post = {}
        if loss is not None:
            post["loss"] = f"{loss:.4f}"
        if tokens_per_second:
            post["tok/s"] = f"{tokens_per_second:,.0f}"
        self._bar.set_postfix(post, refresh=False)
        self._bar.refresh()

    def summary(self, values: dict[str, Any]) -> None:
        if self._wandb is not None:
            for k, v in values.items():
                self._wandb.summary[k] = v

    def info(self) -> Tracking:
        url = None
        if self._wandb is not None and self.mode == "online":
            url = self._wandb.url
        elif self.mode != "disabled" and (entity := self.cfg.tracking.entity or os.environ.get("WANDB_ENTITY")):
            # Offline: the run id is ours, so the URL the run will have once synced is known now.
            url = f"https://wandb.ai/{entity}/{self.cfg.tracking.project}/runs/{self.run_id}"
        return Tracking(
            wandb_mode=self.mode,  # type: ignore[arg-type]
            wandb_run_id=self.run_id if self.mode != "disabled" else None,
            wandb_url=url,
        )

    def close(self) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.close()
        self._file.close()
        if self._wandb is not None:
            self._wandb.finish()


def read_metric_lines(text: str) -> tuple[list[dict[str, Any]], int]:
    """The JSON objects of a metrics.jsonl, in order, and how many lines were not one (skipped; blank lines do not
    count). Every reader of the file starts here: run-page curves, the data browser, the copy the bot commits
    beside a run's results and its comment's loss curve."""
    rows: list[dict[str, Any]] = []
    bad = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(obj, dict):
            rows.append(obj)
        else:
            bad += 1
    return rows, bad
