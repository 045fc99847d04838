"""``openlab annotate-server``: an OpenAI-compatible endpoint serving a GGUF with our JAX model.

llama-cpp-python publishes no wheel for this Python on PyPI (it builds llama.cpp from source), so the lab
serves the same GGUF with its own model: ``GET /v1/models`` and ``POST /v1/chat/completions`` with greedy
decoding, ``max_tokens``, ``stop`` at the end-of-turn token and ``logprobs``/``top_logprobs`` in OpenAI's shape.
Requests are served one forward at a time (a lock); it exists so the ``openai`` engine is tested against a real
server process, and it is the smallest stand-in for vLLM's server in production.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import numpy as np
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

MAX_NEW_TOKENS = 256


class Message(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: str
    content: str


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")  # OpenAI clients send many optional fields we do not use

    model: str | None = None
    messages: list[Message] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_NEW_TOKENS)
    max_completion_tokens: int | None = Field(default=None, ge=1, le=MAX_NEW_TOKENS)
    logprobs: bool = False
    continue_final_message: bool = False  # vLLM's: the last assistant message is a pre-fill to continue
    top_logprobs: int | None = Field(default=None, ge=0, le=20)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "invalid_request_error"}}, status_code=status)


def create_app(model: str | None = None) -> FastAPI:
    from runner.annotation.local import ModelRunner
    from runner.pretrained import load_cached

    pre = load_cached(model)
    runner = ModelRunner(pre, batch_size=1)
    lock = threading.Lock()
    name = pre.name
    stop = {i for i in (pre.eos_id, pre.tokenizer.token_to_id("<|im_end|>")) if i is not None}
    app = FastAPI(title="openlab annotate-server")

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "openlab"}]}

    @app.post("/v1/chat/completions")
    def chat(body: dict[str, Any]) -> Any:
        try:
            req = ChatRequest.model_validate(body)
        except ValidationError as err:
            first = err.errors()[0]
            return _error(400, f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}")
        msgs = [m.model_dump() for m in req.messages]
        if req.continue_final_message and msgs[-1]["role"] == "assistant" and len(msgs) > 1:
            text = pre.render_chat(msgs[:-1]) + msgs[-1]["content"]
        else:
            text = pre.render_chat(msgs)
        ids = pre.encode(text)
        if len(ids) > pre.config.seq_len:
            return _error(400, f"messages: {len(ids)} tokens, more than the context of {pre.config.seq_len}")
        with lock:
            out, dists = runner.generate(ids, req.max_completion_tokens or req.max_tokens or 16, stop)
        finished = bool(out) and out[-1] in stop
        content_ids = out[:-1] if finished else out
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": pre.tokenizer.decode(content_ids)},
            "finish_reason": "stop" if finished else "length",
            "logprobs": None,
        }
        if req.logprobs:
            choice["logprobs"] = {"content": [_entry(pre, t, d, req.top_logprobs or 0) for t, d in zip(out, dists, strict=True)]}
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": name,
            "choices": [choice],
            "usage": {"prompt_tokens": len(ids), "completion_tokens": len(out), "total_tokens": len(ids) + len(out)},
        }

    return app


def _entry(pre: Any, tok: int, dist: np.ndarray, k: int) -> dict[str, Any]:
    def piece(i: int) -> str:
        return pre.tokenizer.decode([int(i)], skip_special_tokens=False)

    return {
        "token": piece(tok),
        "logprob": float(dist[tok]),
        "top_logprobs": [{"token": piece(i), "logprob": float(dist[i])} for i in np.argsort(-dist)[:k]],
    }


def serve(host: str, port: int, model: str | None = None) -> None:
    import uvicorn

    uvicorn.run(create_app(model), host=host, port=port, log_level="warning")
