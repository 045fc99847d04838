"""Environment variables the runner reads, as one pydantic settings model: the source of the README's table.

Code reads these where it needs them (often deep in a library call); this model is their single declaration,
with the default and meaning of each, and a test checks that every variable read anywhere in the code is
declared here or in :mod:`bot.config.settings`, so the configuration reference cannot drift from the code.
"""

from __future__ import annotations

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def env(name: str, default: object = None, description: str = "") -> object:
    return Field(default, validation_alias=AliasChoices(name), description=description)


class RunnerEnvironment(BaseSettings):
    """Training, the executor and dispatch (`openlab train | plan | run | submit | status | cancel`)."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=False)

    storage_prefix: str | None = env(
        "OPENLAB_STORAGE_PREFIX", None, "Store for executor outputs and records (path, gs://, memory:// for plans); "
        "default out/steps. The bot's dispatcher uses it over openlab.yml's storage_prefix.")
    cache_dir: str | None = env("OPENLAB_CACHE_DIR", None, "Token cache root (path or gs://); default ~/.cache/openlab/tokens.")
    heartbeat_s: float = env("OPENLAB_HEARTBEAT_S", 10.0, "Seconds between a running step's lease heartbeats.")
    lease_timeout_s: float = env("OPENLAB_LEASE_TIMEOUT_S", 60.0, "A lease this old is stale: another launch takes the step over.")
    max_train_steps: int | None = env("OPENLAB_MAX_TRAIN_STEPS", None, "Caps every train step of an experiment (smoke tests).")
    git_commit: str | None = env("OPENLAB_GIT_COMMIT", None, "Set by `openlab submit` for the job: the SHA its archive holds (provenance).")
    git_remote: str | None = env("OPENLAB_GIT_REMOTE", None, "Set by `openlab submit` for the job: the repository's remote URL.")
    run_id: str | None = env("OPENLAB_RUN_ID", None, "Set by the bot for the job: its run id (also WANDB_RUN_ID).")
    pr: str | None = env("OPENLAB_PR", None, "Set by the bot for the job: the pull request number.")
    distributed: bool = env("OPENLAB_DISTRIBUTED", False, "1: call jax.distributed.initialize() with auto-detection (TPU pods, SLURM).")
    jax_coordinator: str | None = env("JAX_COORDINATOR_ADDRESS", None, "Multi-host by hand: host:port of process 0.")
    jax_processes: int | None = env("JAX_NUM_PROCESSES", None, "Multi-host by hand: number of processes.")
    jax_process_id: int | None = env("JAX_PROCESS_ID", None, "Multi-host by hand: this process's index.")
    log_format: str = env("OPENLAB_LOG_FORMAT", "json", "json (one object per line, keyed by delivery/repo/PR/SHA/run id) or text.")
    log_level: str = env("OPENLAB_LOG_LEVEL", "INFO", "Log level of bot and runner.")
    ray_address: str | None = env("RAY_ADDRESS", None, "Ray cluster (Jobs API / dashboard URL); unset = embedded local Ray.")
    ray_api_address: str | None = env("RAY_API_SERVER_ADDRESS", None, "Jobs API address when it differs from RAY_ADDRESS.")
    ray_auth_token: str | None = env("RAY_AUTH_TOKEN", None, "Ray token auth; a fresh random one for embedded Ray when unset.")
    wandb_api_key: str | None = env("WANDB_API_KEY", None, "W&B online when set; offline otherwise (tests: disabled).")
    wandb_mode: str | None = env("WANDB_MODE", None, "Force W&B mode: online, offline or disabled.")
    wandb_entity: str | None = env("WANDB_ENTITY", None, "W&B entity: runs get their URL at launch, also offline.")
    wandb_project: str | None = env("WANDB_PROJECT", None, "W&B project (the bot sets it from openlab.yml).")
    wandb_run_id: str | None = env("WANDB_RUN_ID", None, "Set by the bot for the job: the W&B run id (= run id).")
    hf_token: str | None = env("HF_TOKEN", None, "Hugging Face token for gated datasets or tokenizers.")
    plan_sandbox: str = env("OPENLAB_PLAN_SANDBOX", "bwrap", "Sandbox for plans of PR code: bwrap (default; fail closed if missing), nsjail, or unsandboxed (weaker; every plan says so).")
