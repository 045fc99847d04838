"""Tokens for the GitHub client: a GitHub App's installation tokens, or a fixed token (Actions' GITHUB_TOKEN).

App mode signs a JWT (RS256, ``iat`` 60 s in the past against clock drift, ``exp`` 9 minutes ahead, ``iss`` the
App id) and exchanges it at ``POST /app/installations/{id}/access_tokens``. Tokens live one hour; each is cached
per installation and refreshed 5 minutes before ``expires_at``.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime
from pathlib import Path

import jwt
import requests

from runner.errors import ConfigError

REFRESH_MARGIN_S = 300.0


class AppAuth:
    def __init__(self, app_id: str, private_key: str, base_url: str, timeout_s: float = 20.0) -> None:
        self.app_id = app_id
        self._key = private_key
        self.base_url = base_url.rstrip("/")
        self._cache: dict[int, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._timeout = timeout_s
        self.exchanges = 0

    @classmethod
    def from_files(cls, app_id: str | None, key_path: Path | None, base_url: str) -> AppAuth:
        if not app_id or not key_path:
            raise ConfigError("App mode needs OPENLAB_APP_ID and OPENLAB_PRIVATE_KEY_PATH")
        try:
            return cls(app_id, Path(key_path).read_text(), base_url)
        except OSError as err:
            raise ConfigError(f"OPENLAB_PRIVATE_KEY_PATH: cannot read {key_path}: {err.strerror}") from None

    def app_jwt(self) -> str:
        now = int(time.time())
        return jwt.encode({"iat": now - 60, "exp": now + 540, "iss": self.app_id}, self._key, algorithm="RS256")

    def installation_token(self, installation_id: int) -> str:
        with self._lock:
            cached = self._cache.get(installation_id)
            if cached and cached[1] - REFRESH_MARGIN_S > time.time():
                return cached[0]
            resp = requests.post(
                f"{self.base_url}/app/installations/{installation_id}/access_tokens",
                headers={"Authorization": f"Bearer {self.app_jwt()}", "Accept": "application/vnd.github+json"},
                timeout=self._timeout,
            )
            if resp.status_code != 201:
                raise ConfigError(f"installation {installation_id}: token exchange failed ({resp.status_code})")
            data = resp.json()
            expires = datetime.fromisoformat(data["expires_at"].replace("Z", "+00:00")).timestamp()
            self._cache[installation_id] = (data["token"], expires)
            self.exchanges += 1
            return data["token"]
