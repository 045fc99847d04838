"""The ``openai`` engine: any OpenAI-compatible chat endpoint (vLLM's server in production).

Requests go out ``concurrency`` at a time, no faster than ``requests_per_second``; a 429, a 5xx or a dropped
connection is retried with exponential backoff (honouring ``Retry-After``) up to ``retries`` times; whatever
still fails is recorded on the document as an error, never raised. The label comes from ``top_logprobs`` of the
first answer token when the endpoint returns them (vLLM and ``openlab annotate-server`` do), else from Marin's
"Final score: N" parse of the text.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from runner.annotation.labels import ANSWER_PREFIX, Annotation, from_logprobs, parse_score

RETRYABLE = {408, 409, 429, 500, 502, 503, 504}


class RateLimiter:
    """At most ``rate`` request starts per second across threads (``None`` = unlimited)."""

    def __init__(self, rate: float | None) -> None:
        self.interval = 1.0 / rate if rate else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        time.sleep(max(0.0, start - now))


class OpenAIEngine:
    def __init__(self, base_url: str, model: str, *, min_score: int = 0, max_score: int = 5, min_mass: float = 0.5,
                 max_tokens: int = 1, concurrency: int = 4, requests_per_second: float | None = None,
                 retries: int = 4, timeout_s: float = 120.0, api_key_env: str = "OPENAI_API_KEY") -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.min_score, self.max_score, self.min_mass = min_score, max_score, min_mass
        self.max_tokens, self.concurrency, self.retries = max_tokens, concurrency, retries
        self.limiter = RateLimiter(requests_per_second)
        key = os.environ.get(api_key_env)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.client = httpx.Client(timeout=timeout_s, headers=headers)
        self.retried = 0

    def annotate(self, prompts: list[str]) -> list[Annotation]:
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(self._one, prompts))

    def _one(self, prompt: str) -> Annotation:
        # The answer is pre-filled (vLLM's continue_final_message), so the first token is the score.
        messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": ANSWER_PREFIX}]
        body = {"model": self.model, "messages": messages, "temperature": 0, "max_tokens": self.max_tokens,
                "logprobs": True, "top_logprobs": 20, "continue_final_message": True,
                "add_generation_prompt": False}
        error = "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                self.retried += 1
            self.limiter.wait()
            try:
                r = self.client.post(self.url, json=body)
            except httpx.HTTPError as err:
                error = f"{type(err).__name__}: {err}"
                time.sleep(min(30.0, 0.5 * 2**attempt))
                continue
            if r.status_code == 200:
                return self._read(r)
            error = f"HTTP {r.status_code}: {r.text[:200]}"
            if r.status_code not in RETRYABLE:
                break
            time.sleep(_retry_after(r) or min(30.0, 0.5 * 2**attempt))
        return Annotation(label=None, error=error)

    def _read(self, r: httpx.Response) -> Annotation:
        try:
            data: dict[str, Any] = r.json()
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
            tokens = int(data.get("usage", {}).get("total_tokens", 0))
        except (ValueError, KeyError, IndexError, TypeError) as err:
            return Annotation(label=None, error=f"malformed response: {err!r}", raw=r.text[:200])
        first = ((choice.get("logprobs") or {}).get("content") or [None])[0]
        if first and first.get("top_logprobs"):
            lps = {e["token"]: float(e["logprob"]) for e in first["top_logprobs"]}
            return from_logprobs(lps, self.min_score, self.max_score, self.min_mass).model_copy(update={"tokens": tokens})
        label, err = parse_score(ANSWER_PREFIX + text, self.min_score, self.max_score)
        return Annotation(label=label, raw=text[:500], error=err, tokens=tokens)


def _retry_after(r: httpx.Response) -> float | None:
    try:
        return min(60.0, float(r.headers.get("retry-after", "")))
    except ValueError:
        return None
