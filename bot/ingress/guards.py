"""Request guards of the webhook server: body size, body read time, JSON depth, and the 4xx each one answers.

GitHub redelivers a webhook that got a 5xx (and a person may press "Redeliver" forever), so a 5xx must mean "a
transient fault on our side, please retry" and nothing else. Everything wrong with the *request* is a 4xx with a
JSON body saying what is wrong:

- a body over the cap: 413, after reading (and discarding) up to ``DRAIN_BYTES`` of it, so a client that sends
  its whole body before reading the answer (GitHub, curl, requests) gets the 413 rather than a connection reset;
  a declared length past ``DRAIN_BYTES`` is answered at once and the connection closed;
- a body that has not arrived within the read timeout: 408 (a slow client cannot hold a connection open);
- a malformed Content-Length: 400; JSON that is malformed, not an object, or nested deeper than
  ``runner.safeparse.MAX_DEPTH``: 400.

Header size is bounded by the HTTP layer (``bot.ingress.serving.server_config``: h11 with a 64 KiB limit -> 400).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

from runner.errors import ConfigError
from runner.safeparse import MAX_DEPTH, loads_json

# Past GitHub's 25 MB payload cap: any genuine delivery that is too large for us is still answered cleanly.
DRAIN_BYTES = 32 * 1024 * 1024


class Rejected(Exception):
    """A request the server answers with a 4xx: `status`, a one-line `error`, and whether to close the socket."""

    def __init__(self, status: int, error: str, *, outcome: str, close: bool = False) -> None:
        super().__init__(error)
        self.status, self.error, self.outcome, self.close = status, error, outcome, close


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int
    body_timeout_s: float
    drain_bytes: int = DRAIN_BYTES
    max_depth: int = MAX_DEPTH


def declared_length(request: Request, limits: Limits) -> int | None:
    """The Content-Length header as an int (None when absent); a bad or huge one is Rejected."""
    length = request.headers.get("content-length")
    if length is None:
        return None
    if not length.strip().isdigit() or len(length) > 20:
        raise Rejected(400, "Content-Length is not a non-negative integer", outcome="bad_headers", close=True)
    n = int(length)
    if n > limits.drain_bytes:
        raise Rejected(413, f"body over {limits.max_body_bytes} bytes", outcome="too_large", close=True)
    return n


async def read_body(request: Request, limits: Limits) -> bytes:
    """The whole body within `limits`, or Rejected (413 too large, 408 too slow, 400 client gone mid-body)."""
    declared_length(request, limits)
    deadline = time.monotonic() + limits.body_timeout_s
    body = bytearray()
    received, over = 0, False
    receive = request.receive
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Rejected(408, f"request body not received within {limits.body_timeout_s:g} s",
                           outcome="slow_body", close=True)
        try:
            message: dict[str, Any] = await asyncio.wait_for(receive(), remaining)
        except TimeoutError:
            raise Rejected(408, f"request body not received within {limits.body_timeout_s:g} s",
                           outcome="slow_body", close=True) from None
        if message["type"] == "http.disconnect":
            raise Rejected(400, "client disconnected before the body was complete", outcome="disconnect", close=True)
        chunk = message.get("body", b"")
        received += len(chunk)
        if received > limits.max_body_bytes:
            over = True
            body.clear()  # keep draining (bounded) so the client reads our 413, but hold none of it
            if received > limits.drain_bytes:
                raise Rejected(413, f"body over {limits.max_body_bytes} bytes", outcome="too_large", close=True)
        elif chunk:
            body += chunk
        if not message.get("more_body", False):
            break
    if over:
        raise Rejected(413, f"body over {limits.max_body_bytes} bytes", outcome="too_large")
    return bytes(body)


def parse_payload(raw: bytes, limits: Limits) -> dict[str, Any]:
    """The webhook body as a JSON object, or Rejected(400) saying what is wrong (depth included)."""
    try:
        payload = loads_json(raw, "webhook body", limits.max_depth)
    except ConfigError as err:
        raise Rejected(400, str(err), outcome="bad_json") from None
    if not isinstance(payload, dict):
        raise Rejected(400, "webhook body: payload is not a JSON object", outcome="bad_payload")
    return payload
