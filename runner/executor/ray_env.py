"""Connecting to Ray: an embedded local Ray started on demand, or an existing cluster.

The embedded Ray binds to 127.0.0.1, has usage stats off and token authentication on, set explicitly (an
unauthenticated Ray is remote code execution for anyone who can reach it). The token is ``RAY_AUTH_TOKEN`` when
set, otherwise a fresh random one for this process; Ray's own processes inherit it from the environment.

Ray turns a node address of 127.0.0.1 into the host's routable IP and listens on every interface. Its
single-machine mode (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, meant for laptops) keeps every socket on the
loopback; we set it for local Ray, which never has a second node anyway.

Approved PR code runs in Ray jobs; on one machine those jobs would inherit the environment of whoever started
Ray. :data:`BOT_SECRETS` names the bot's secret variables; :func:`job_env` drops them from the environment of a
local head (:mod:`runner.executor.local_head`), of an embedded Ray (:func:`connect`) and from a job's
``env_vars`` (:func:`runner.executor.dispatch.submit`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import sys
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlparse

from runner.errors import OpenlabError


class RayConnectError(OpenlabError):
    """The Ray address cannot be reached or Ray refuses the connection."""


# The bot's secrets (bot/config/settings.py, bot/config/reference.py): none may reach a job's environment.
BOT_SECRETS = frozenset({
    "GITHUB_TOKEN", "GH_TOKEN", "OPENLAB_WEBHOOK_SECRETS", "OPENLAB_PRIVATE_KEY_PATH", "OPENLAB_APP_ID",
    "OPENLAB_SIGNING_KEY", "OPENLAB_SIGNING_KEY_FILE", "OPENLAB_LEDGER_URL", "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
})
_SECRET_MARKS = ("GITHUB_TOKEN", "WEBHOOK_SECRET", "PRIVATE_KEY", "SIGNING_KEY")


def is_bot_secret(name: str) -> bool:
    upper = name.upper()
    return upper in BOT_SECRETS or any(mark in upper for mark in _SECRET_MARKS)


def job_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the bot's secret variables: what a Ray process that runs approved code may see."""
    return {k: v for k, v in env.items() if not is_bot_secret(k)}


@contextlib.contextmanager
def _secrets_hidden() -> Iterator[None]:
    """Take the bot's secrets out of os.environ while Ray starts its processes (they copy os.environ)."""
    hidden = {k: os.environ.pop(k) for k in list(os.environ) if is_bot_secret(k)}
    try:
        yield
    finally:
        os.environ.update(hidden)


def secure_local_env() -> dict[str, str]:
    """The environment every local Ray process of ours runs with (set before Ray starts)."""
    env = {
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "token",
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_AUTH_TOKEN": os.environ.get("RAY_AUTH_TOKEN") or secrets.token_hex(24),
    }
    os.environ.update(env)
    _forget_cached_token()
    return env


def _forget_cached_token() -> None:
    """Ray's client caches the first token it reads in a process; a later head with another token (a test suite
    starting several, an operator switching clusters) would be refused until the cache is dropped."""
    try:
        from ray._raylet import AuthenticationTokenLoader

        AuthenticationTokenLoader.instance().reset_cache()
    except (ImportError, AttributeError):  # another Ray version: nothing cached that we know of
        pass


def check_reachable(address: str, timeout_s: float = 3.0) -> None:
    """Fail in seconds, not minutes, when nothing listens at a Ray address (ray.init retries for long)."""
    if address in ("auto", "local"):
        return
    url = urlparse(address if "://" in address else f"tcp://{address}")
    host, port = url.hostname, url.port
    if host is None:
        raise RayConnectError(f"Ray address {address!r} is not host:port or a URL")
    if port is None:
        port = {"ray": 10001, "http": 8265, "https": 443}.get(url.scheme, 6379)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return
    except OSError as err:
        raise RayConnectError(
            f"cannot reach Ray at {address} ({host}:{port}): {err.strerror or err}"
        ) from None


def connect(
    address: str | None = None, *, num_cpus: int | None = None, resources: dict[str, float] | None = None
) -> str:
    """Initialise Ray in this process and say where: 'embedded' or the cluster address."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if address is None and "ray" not in sys.modules:
        secure_local_env()  # before `import ray`: Ray reads the loopback switch at import time
    import ray

    if ray.is_initialized():
        return "existing"
    kwargs: dict[str, Any] = {"log_to_driver": True, "configure_logging": False}
    if address is None:
        secure_local_env()
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False  # in case ray was imported before the env var was set
        with _secrets_hidden():
            ray.init(
                address="local",
                num_cpus=num_cpus or os.cpu_count() or 1,
                resources=resources or None,
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                **kwargs,
            )
        return "embedded"
    check_reachable(address)
    try:
        ray.init(address=address, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as err:
        raise RayConnectError(f"cannot connect to Ray at {address}: {err}") from None
    return address


def shutdown() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()


def check_feasible(needs: dict[str, dict[str, float]], embedded: bool) -> list[str]:
    """Steps whose resources no node of the cluster has: an error on embedded Ray, a warning on a cluster
    (an autoscaler may still add the node)."""
    import ray

    have = ray.cluster_resources()
    problems = []
    for ident, want in needs.items():
        short = {k: v for k, v in want.items() if k != "memory_gb" and v and have.get(k, 0.0) < v}
        if short:
            problems.append(
                f"step {ident} needs {short} but the cluster has {{{', '.join(f'{k}: {have.get(k, 0)}' for k in short)}}}"
            )
    if problems and embedded:
        raise RayConnectError(
            "; ".join(problems) + " (embedded Ray: give --ray ADDRESS of a cluster that has them)"
        )
    return problems
