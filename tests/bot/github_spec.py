"""GitHub's published descriptions (npm: @octokit/openapi, @octokit/webhooks-examples), loaded for tests.

`make github-specs` installs them under tests/bot/github_specs/node_modules. The OpenAPI file is 3.0 (`nullable`),
so schemas are converted to JSON Schema 2020-12 before validation.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest

SPECS = Path(__file__).parent / "github_specs" / "node_modules" / "@octokit"
OPENAPI = SPECS / "openapi" / "generated" / "api.github.com.json"
EXAMPLES = SPECS / "webhooks-examples" / "api.github.com" / "index.json"


def require_specs() -> None:
    if not OPENAPI.exists() or not EXAMPLES.exists():
        pytest.skip("GitHub specs not installed: run `make github-specs` (npm)")


def _convert(node: Any) -> Any:
    if isinstance(node, list):
        return [_convert(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _convert(v) for k, v in node.items() if k not in ("nullable", "example", "examples")}
    if node.get("nullable"):
        if "type" in out and isinstance(out["type"], str):
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


@cache
def spec() -> dict[str, Any]:
    doc = json.loads(OPENAPI.read_text())
    doc["components"] = _convert(doc["components"])
    return doc


@cache
def _operations() -> list[tuple[str, re.Pattern[str], str, dict[str, Any]]]:
    ops = []
    for template, item in spec()["paths"].items():
        pattern = re.sub(r"\{(path|ref)\}", r"(?P<\1>.+)", template)
        pattern = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern)
        for method, op in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                ops.append((method.upper(), re.compile(f"^{pattern}$"), template, op))
    # literal-heavy templates first, so /issues/comments/{id} wins over /issues/{number}/...
    ops.sort(key=lambda o: (o[2].count("{"), -len(o[2])))
    return ops


def operation(method: str, path: str) -> tuple[str, dict[str, Any]] | None:
    for m, rx, template, op in _operations():
        if m == method and rx.match(path):
            return template, op
    return None


def validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    root = {**_convert(schema), "components": spec()["components"]}
    return jsonschema.Draft202012Validator(root)


def request_body_errors(op: dict[str, Any], body: Any) -> list[str]:
    content = (op.get("requestBody") or {}).get("content", {})
    schema = (content.get("application/json") or {}).get("schema")
    if body is None:
        return ["body required"] if (op.get("requestBody") or {}).get("required") else []
    if schema is None:
        return ["operation takes no JSON body"]
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator(schema).iter_errors(body)]


def response_schema(op: dict[str, Any], status: int) -> dict[str, Any] | None:
    resp = op.get("responses", {}).get(str(status))
    if resp and "$ref" in resp:
        resp = spec()["components"]["responses"][resp["$ref"].rsplit("/", 1)[-1]]
    content = (resp or {}).get("content", {})
    return (content.get("application/json") or {}).get("schema")


def webhook_schema(event: str, action: str | None) -> dict[str, Any] | None:
    key = event.replace("_", "-") + (f"-{action.replace('_', '-')}" if action else "")
    hook = spec()["x-webhooks"].get(key)
    if hook is None:
        return None
    return hook["post"]["requestBody"]["content"]["application/json"]["schema"]


@cache
def examples() -> dict[str, list[dict[str, Any]]]:
    return {e["name"]: e["examples"] for e in json.loads(EXAMPLES.read_text())}
