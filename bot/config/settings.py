"""Process settings for the bot, read from the environment (``OPENLAB_*``).

The server refuses to start without at least one webhook secret (probot's silent ``development`` default is the
counter-example). Several secrets may be given, comma-separated, so a secret can be rotated without downtime: a
delivery is accepted if it verifies under any of them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from runner.errors import ConfigError

WEAK_SECRETS = {"", "development", "secret", "changeme", "test"}


class BotSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="OPENLAB_", extra="ignore")

    webhook_secrets: Annotated[list[str], NoDecode] = Field(default_factory=list, description="Webhook secrets, comma-separated; several for rotation. Required: the server refuses to start without one.")
    ledger_url: str = Field("sqlite:///openlab-ledger.sqlite3", description="SQLAlchemy URL of the ledger (SQLite, or Postgres for several hosts and for Actions mode).")
    github_api_url: str = Field("https://api.github.com", description="GitHub REST root (GitHub Enterprise, or the local sandbox).")
    app_id: str | None = Field(None, description="GitHub App id (App mode).")
    private_key_path: Path | None = Field(None, description="The GitHub App private key (PEM file), for JWT -> installation tokens.")
    bot_login: str = Field("openlab[bot]", description="The bot's own login: its comments are found by marker and this author.")
    max_body_bytes: int = Field(5 * 1024 * 1024, description="Webhook bodies over this size get 413 (GitHub caps payloads at 25 MB).")
    write_interval_s: float = Field(1.0, description="Seconds between GitHub writes (GitHub asks for about one per second).")
    worker: str = Field("process", description="process (default) | thread | off: where the queue worker runs.")
    plan_timeout_s: float = Field(120.0, description="Wall-clock limit of one sandboxed `openlab plan` of PR code.")
    plan_memory_mb: int = Field(4096, description="Memory limit of one sandboxed `openlab plan`.")
    recovery_interval_s: float = Field(600.0, ge=0, description="App mode: seconds between passes over the App's webhook delivery log that redeliver deliveries which failed while the server was away (a first pass runs at start); 0 turns recovery off.")
    recovery_lookback_s: float = Field(72 * 3600.0, gt=0, description="How far back recovery looks in the delivery log (GitHub keeps it, and allows redelivery, for 3 days).")
    recovery_max_attempts: int = Field(3, ge=1, description="Recovery gives up on a delivery GitHub has already attempted this many times (the original included).")
    recovery_start_delay_s: float = Field(5.0, ge=0, description="Seconds after start before the first recovery pass, so the server listens when GitHub redelivers.")
    request_timeout_s: float = Field(10.0, gt=0, description="Seconds a client has to send a request's head (else the connection is closed) and then its body (else 408): slow clients cannot hold connections.")

    @field_validator("worker", mode="before")
    @classmethod
    def _worker(cls, v: object) -> object:
        aliases = {"true": "process", "1": "process", "false": "off", "0": "off", "none": "off"}
        v = aliases.get(str(v).strip().lower(), str(v).strip().lower())
        if v not in ("process", "thread", "off"):
            raise ValueError("must be process, thread or off")
        return v

    @field_validator("webhook_secrets", mode="before")
    @classmethod
    def _split(cls, v: object) -> object:
        if isinstance(v, str):
            return [s.strip() for s in v.split(",") if s.strip()]
        return v

    def require_secrets(self) -> list[bytes]:
        """The secrets as bytes, or a ConfigError naming the variable: the server never runs unauthenticated."""
        if not self.webhook_secrets:
            raise ConfigError("OPENLAB_WEBHOOK_SECRETS is not set: refusing to accept unsigned webhooks")
        weak = [s for s in self.webhook_secrets if s.lower() in WEAK_SECRETS or len(s) < 8]
        if weak:
            raise ConfigError("OPENLAB_WEBHOOK_SECRETS holds a default or short (<8 chars) secret: refusing to start")
        return [s.encode() for s in self.webhook_secrets]


def actions_defaults() -> dict[str, Any]:
    """What Actions mode (``GITHUB_TOKEN``) implies where no ``OPENLAB_*`` variable says otherwise: the runner's API
    URL, comments as ``github-actions[bot]``, a ledger file in the workspace. One place for ``openlab event`` and
    ``openlab reconcile``."""
    out: dict[str, Any] = {}
    if "OPENLAB_GITHUB_API_URL" not in os.environ and os.environ.get("GITHUB_API_URL"):
        out["github_api_url"] = os.environ["GITHUB_API_URL"]
    if "OPENLAB_BOT_LOGIN" not in os.environ:
        out["bot_login"] = "github-actions[bot]"
    if not os.environ.get("OPENLAB_LEDGER_URL"):
        out["ledger_url"] = "sqlite:///.openlab-ledger.sqlite3"
    return out


def load_settings(**overrides: Any) -> BotSettings:
    """BotSettings from the environment, with bad values reported as one line naming the variable."""
    try:
        return BotSettings(**overrides)
    except ValidationError as err:
        first = err.errors()[0]
        name = "OPENLAB_" + "_".join(str(p) for p in first["loc"][:1]).upper()
        raise ConfigError(f"{name}: {first['msg']}") from None
    except Exception as err:  # pydantic-settings' own parse errors
        raise ConfigError(f"settings: {err}") from None
