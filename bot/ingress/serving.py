"""Serving ASGI apps with uvicorn: the bounded HTTP layer `openlab serve` uses, and a free-port server in a thread
(the demo's and the tests' real HTTP).

The HTTP layer is uvicorn's h11 protocol with bounds the app cannot set itself: request headers at most
``MAX_HEADER_BYTES`` (larger answers 400 and closes), and a client that has not sent a complete request head
within ``HEADER_TIMEOUT_S`` of connecting (or of its previous response) is disconnected, so slow-header clients
cannot hold connections. Body limits (size, read time) are the app's: see `bot.ingress.guards`.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_HEADER_BYTES = 64 * 1024
HEADER_TIMEOUT_S = 10.0


class BoundedH11Protocol(H11Protocol):
    """h11 with a deadline on each request head (uvicorn has a keep-alive timeout but none for a slow head)."""

    header_timeout_s = HEADER_TIMEOUT_S
    _head_timer: asyncio.TimerHandle | None = None

    def _arm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        cycle = self.cycle
        self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_deadline, cycle)

    def _head_deadline(self, cycle: object) -> None:
        if self.cycle is cycle and not self.transport.is_closing():  # no new request head since we armed
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        super().connection_lost(exc)


def server_config(app: Any, host: str, port: int, header_timeout_s: float = HEADER_TIMEOUT_S,
                  **kw: Any) -> uvicorn.Config:
    """The uvicorn configuration of every server we run: h11 with bounded headers and head time."""
    protocol = type("BoundedH11", (BoundedH11Protocol,), {"header_timeout_s": header_timeout_s})
    return uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                          http=protocol, h11_max_incomplete_event_size=MAX_HEADER_BYTES, **kw)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServedApp:
    def __init__(self, app: Any, port: int | None = None) -> None:
        self.port = port or free_port()
        self.server = uvicorn.Server(server_config(app, "127.0.0.1", self.port, lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 20.0) -> ServedApp:
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError(f"server on port {self.port} did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(20)

    def __enter__(self) -> ServedApp:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
