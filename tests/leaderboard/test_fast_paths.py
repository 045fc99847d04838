"""The build's fast paths give exactly the answers of the reference paths they stand in for."""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import pytest
from conftest import write
from factory import make_results, signed

from leaderboard import load
from leaderboard.load import LoadedRun, load_one, parse
from leaderboard.pages import RunPages, config_text, environment
from leaderboard.rows import make_row
from runner.schema import ResultsError, dumps_results, loads_results

GOOD = dumps_results(make_results(1, attested=True))


def _edit(**changes: object) -> str:
    d = json.loads(GOOD)
    for k, v in changes.items():
        if v is None:
            d.pop(k, None)
        else:
            d[k] = v
    return json.dumps(d)


CASES = {
    "good": GOOD,
    "bom": "\ufeff" + GOOD,
    "nan in a config field": GOOD.replace('"learning_rate": 0.003', '"learning_rate": NaN'),
    "infinity headline": GOOD.replace('"training_seconds": ', '"training_seconds": -Infinity, "x": '),
    "NaN only in text": _edit(description="NaN handling"),
    "no schema_version": _edit(schema_version=None),
    "newer schema_version": _edit(schema_version=2),
    "not an object": "[1, 2]",
    "not json": "{nope",
    "missing field": _edit(params=None),
    "zero bpb": _edit(bpb=0),
    "repeated key": GOOD.rstrip()[:-1] + ', "name": "Second"}',
    "int as string": _edit(params="12"),
    "unicode": _edit(description="café 😀 \u2028"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_parse_answers_like_loads_results(case: str) -> None:
    raw = CASES[case].encode()
    try:
        want = loads_results(raw, "f.json")
    except ResultsError as err:
        with pytest.raises(ResultsError) as got:
            parse(raw, "f.json")
        assert str(got.value) == str(err)
    else:
        assert parse(raw, "f.json") == want


def _tricky_tree(root: Path) -> None:
    base = root / "experiments"
    for folder in ["a/r1", "a/b/r2", ".hidden/r3", "a/.h/r4", "solo", "x/results.json/r5"]:
        write(base, folder, make_results(len(folder)))
    write(root, "experiments", make_results(9))  # experiments/results.json itself: ** matches zero folders
    (base / "a" / "r1" / "metrics.jsonl").write_text("{}\n")
    (base / "a" / "b" / "r2" / "metrics.jsonl").symlink_to(base / "nowhere")  # broken: no metrics
    os.symlink(base / "a" / "b", base / "linked")  # glob follows symlinked folders
    (base / "not_a_dir").write_text("")
    (base / "odd").mkdir()
    (base / "odd" / "results.json").symlink_to(base / "nowhere")  # broken: not a file


@pytest.mark.parametrize(
    "pattern",
    ["experiments/**/results.json", "./experiments/**/results.json", "**/results.json", "experiments/a/**/metrics.jsonl"],
)
def test_walked_glob_matches_glob(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pattern: str) -> None:
    _tricky_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    for pat in (pattern, str(tmp_path / pattern.removeprefix("./"))):
        fast = load._discover(pat)
        monkeypatch.setattr(load, "_walk_glob", lambda _p: None)
        slow = load._discover(pat)
        monkeypatch.undo()
        monkeypatch.chdir(tmp_path)
        assert fast == slow and fast[0], pat
    hits = sorted(p for p in glob.glob("experiments/**/results.json", recursive=True) if os.path.isfile(p))
    assert [p for p, _ in load._discover("experiments/**/results.json")[0]] == hits


def test_run_pages_match_the_whole_template(example_tree: Path, keypair, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(example_tree)
    evil = make_results(50, name="<script>x</script>", description="a & b <i>")
    write(example_tree, "experiments/speedrun/evil", evil)
    found, _ = load.discover("experiments/**/results.json")
    common = {"site_title": "T <&>", "built_at": "now", "n_runs": 3, "n_warnings": 1, "key_id": "k", "repo_url": None}
    ranks = [{"name": "All <runs>", "rank": 2, "of": 9, "track": "all"}]
    pages = RunPages(common)
    assert pages.frame is not None
    template = environment().get_template("run.html.j2")
    checked = 0
    for i, (url, folder, has_metrics) in enumerate(found):
        run = load_one(url, folder, has_metrics, keypair[1])[0]
        assert isinstance(run, LoadedRun)
        row = make_row(i, run, None, True)
        html, _, _ = pages.render(run, row, ranks)
        ctx = pages.context(run, row, ranks, load_curves(run), config_text(run.results))
        assert html == template.render(ctx)
        checked += 1
    assert checked == len(found) > 10


def load_curves(run: LoadedRun) -> list[dict]:
    from leaderboard.curves import curve_data

    return curve_data(run.metrics)[0] if run.metrics else []


def test_signed_runs_verify_through_the_fast_parse(tmp_path: Path, keypair) -> None:
    priv, pub = keypair
    path = write(tmp_path, "s", signed(make_results(3, attested=True), priv))
    run, warnings = load_one(str(path), "s", False, pub)
    assert run is not None and run.verification == "verified" and not warnings
