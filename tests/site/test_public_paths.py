"""Local folders of the lab's machines are shortened on every public page; URLs readers can open are kept."""

from __future__ import annotations

import json

import pytest

from leaderboard.public import public_json, public_path, public_value


@pytest.mark.parametrize(("given", "shown"), [
    ("/tmp/demo/store/tokenized/pydoc-byte/v1", "…/pydoc-byte/v1"),
    ("/home/ray/store/speedrun/x", "…/speedrun/x"),
    ("~/.cache/openlab/tokens", "…/openlab/tokens"),
    ("file:///root/site/index.html", "…/site/index.html"),
    ("C:\\Users\\ada\\store\\v1", "…/store/v1"),
    ("gs://lab-bucket/tokenized/v1", "gs://lab-bucket/tokenized/v1"),
    ("https://github.com/lab/openlab", "https://github.com/lab/openlab"),
    ("memory://plans/x", "memory://plans/x"),
    ("experiments/speedrun/ada_tiny/results.json", "experiments/speedrun/ada_tiny/results.json"),
    ("/run", "/run"),  # one part: a command, not a folder
    ("A 4-layer byte-level Llama on /tmp data", "A 4-layer byte-level Llama on /tmp data"),
])
def test_public_path(given: str, shown: str) -> None:
    assert public_path(given) == shown


def test_public_value_and_json_agree() -> None:
    value = {"data": {"cache_dir": "/tmp/x/store/tok/v1", "paths": ["/srv/a/b.txt", "gs://b/c"]}, "n": 3,
             "name": "ada", "quote": 'say "/tmp/x/y"'}
    text = json.dumps(value, indent=2)
    assert json.loads(public_json(text)) == public_value(value)
    assert public_value(value)["data"] == {"cache_dir": "…/tok/v1", "paths": ["…/a/b.txt", "gs://b/c"]}
    assert "/tmp/" not in public_json(text).replace('"say \\"/tmp/x/y\\""', "")
