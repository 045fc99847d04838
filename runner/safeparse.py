"""Depth-bounded YAML and JSON loading for text we do not control (openlab.yml, run configs, webhook payloads).

Python's parsers recurse once per nesting level, so a document nested a few thousand deep raises RecursionError
far from the input that caused it (or, in code that walks the result, anywhere later). Every untrusted document
goes through :func:`loads_json` / :func:`loads_yaml` instead: nesting deeper than ``MAX_DEPTH`` (far more than any
real config or GitHub payload needs) is a :class:`DepthError` naming the source, and malformed text is a
:class:`ParseError` naming the source and line. Both are :class:`~runner.errors.ConfigError`, so every CLI prints
one line and every bot path that already reports a bad config reports these too.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from runner.errors import ConfigError

MAX_DEPTH = 64

try:  # libyaml's parser is iterative and fast; the pure-Python one is the fallback
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader


class ParseError(ConfigError):
    """The text is not valid JSON/YAML."""


class DepthError(ParseError):
    """The document nests deeper than the bound."""


def _too_deep(source: str, max_depth: int) -> DepthError:
    return DepthError(f"{source}: nested deeper than {max_depth} levels; refusing to parse it")


def check_depth(data: object, source: str, max_depth: int = MAX_DEPTH) -> None:
    """Raise DepthError when `data` (parsed JSON/YAML) nests dicts/lists deeper than `max_depth`.

    Iterative, and each container is measured once: YAML aliases share nodes (so a short text can reach a deep,
    or even a cyclic, structure), which a plain walk would either miss or repeat exponentially.
    """
    height: dict[int, int] = {}  # id -> nesting height of the container (1 = no containers inside)
    open_: set[int] = set()
    stack: list[tuple[object, bool]] = [(data, False)]
    while stack:
        node, done = stack.pop()
        if not isinstance(node, dict | list):
            continue
        key = id(node)
        children = [c for c in (node.values() if isinstance(node, dict) else node) if isinstance(c, dict | list)]
        if done:
            open_.discard(key)
            height[key] = 1 + max((height[id(c)] for c in children), default=0)
            if height[key] > max_depth:
                raise _too_deep(source, max_depth)
            continue
        if key in height:
            continue
        if key in open_:  # a cycle (a YAML alias to an enclosing node): unbounded depth
            raise _too_deep(source, max_depth)
        open_.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in height)
        if len(open_) > max_depth:
            raise _too_deep(source, max_depth)


def loads_json(text: str | bytes, source: str, max_depth: int = MAX_DEPTH, **kwargs: Any) -> Any:
    """json.loads with nesting bounded by `max_depth`; errors name `source`."""
    try:
        data = json.loads(text, **kwargs)
    except RecursionError:
        raise _too_deep(source, max_depth) from None
    except UnicodeDecodeError:
        raise ParseError(f"{source}: not valid UTF-8") from None
    except json.JSONDecodeError as err:
        raise ParseError(f"{source}: not valid JSON at line {err.lineno}, column {err.colno}: {err.msg}") from None
    check_depth(data, source, max_depth)
    return data


def _yaml_error(err: yaml.YAMLError, source: str) -> ParseError:
    mark = getattr(err, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    return ParseError(f"{source}: malformed YAML{where}: {problem}")


def loads_yaml(text: str, source: str, max_depth: int = MAX_DEPTH) -> Any:
    """yaml.safe_load with nesting bounded by `max_depth`; errors name `source` (and the line).

    The event stream is scanned first (the parser does not recurse), so a deep document is refused before the
    recursive composer ever sees it.
    """
    depth = 0
    try:
        for ev in yaml.parse(text, Loader=_Loader):
            if isinstance(ev, yaml.CollectionStartEvent):
                depth += 1
                if depth > max_depth:
                    mark = ev.start_mark
                    line = f" (line {mark.line + 1})" if mark is not None else ""
                    raise DepthError(f"{source}: nested deeper than {max_depth} levels{line}; refusing to parse it")
            elif isinstance(ev, yaml.CollectionEndEvent):
                depth -= 1
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as err:
        raise _yaml_error(err, source) from None
    except RecursionError:  # belt and braces: the scan above should make this unreachable
        raise _too_deep(source, max_depth) from None
    check_depth(data, source, max_depth)  # aliases can nest a shallow text deeply
    return data
