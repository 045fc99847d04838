from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import write
from factory import make_results, signed

from leaderboard.site import BuildOptions, build_site
from leaderboard.tracks import DEFAULT_TRACKS
from runner.cli import main
from runner.schema import dumps_results, loads_results


def build(tmp_path: Path, root: Path, pub: bytes | None = None, **kw):
    return build_site(
        BuildOptions(sources=[str(root)], out=tmp_path / "site", tracks=DEFAULT_TRACKS, public_pem=pub, workers=1, **kw)
    )


def test_example_site(tmp_path: Path, example_tree: Path, keypair, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(example_tree)
    rep = build(tmp_path, "experiments/**/results.json", keypair[1])  # type: ignore[arg-type]
    site = tmp_path / "site"
    assert rep.runs == 12 and rep.files == 12
    assert any("metrics.jsonl: 1 metrics line" in w for w in rep.warnings)
    runs = json.loads((site / "runs.json").read_text())
    assert len(runs) == 12
    assert {loads_results(json.dumps(r)).run_id for r in runs} == {r["run_id"] for r in runs}
    table = json.loads((site / "data" / "table.json").read_text())
    assert sum(v == "verified" for v in (row[14] for row in table["rows"])) == 3
    page = (site / "runs" / "run-0-00000.html").read_text()
    assert "signature verified" in page and 'canvas class="curve" data-title="Training loss"' in page
    curves = (site / "runs" / "run-0-00000.curves.js").read_text()
    assert curves.startswith('(window.OPENLAB_CURVES = window.OPENLAB_CURVES || {})["run-0-00000"] = {')
    assert 'href="https://github.com/openlab/lab/tree/0123456789abcdef0123456789abcdef01234567/experiments/speedrun/single_0"' in table_code(table, "run-0-00000")
    assert "https://github.com/openlab/lab/pull/100" in page and "https://github.com/openlab/lab/issues/10" in page
    assert "self-reported" in (site / "runs" / "run-0-00001.html").read_text()
    index = (site / "index.html").read_text()
    assert "adamw_scaling" in index and "Projected" in index
    for t in DEFAULT_TRACKS:
        fr = json.loads((site / "tracks" / t.id / "frontier.json").read_text())
        assert fr["track"]["id"] == t.id and isinstance(fr["model_flops"], list)
    feed = ET.parse(site / "feed.xml").getroot()
    assert feed.tag.endswith("feed") and len(feed.findall("{http://www.w3.org/2005/Atom}entry")) > 0
    assert (site / "style.css").exists() and (site / "app.js").exists()
    # Links are relative so Pages serves the folder under any path.
    assert 'href="/' not in index and 'src="/' not in index


def table_code(table: dict, run_id: str) -> str:
    row = next(r for r in table["rows"] if r[0] == run_id)
    prefix, rest = row[13]
    return f'href="{table["prefixes"][prefix]}{rest}"'


def test_bad_inputs_are_skipped_or_escaped_with_warnings(tmp_path: Path, keypair) -> None:
    root = tmp_path / "res"
    ok = make_results(1)
    write(root, "good", ok)
    write(root, "notjson", "{this is not json")
    nan = json.loads(dumps_results(make_results(2)))
    write(root, "nan", json.dumps(nan).replace(str(nan["model_flops"]), "NaN", 1))
    neg = dict(nan, model_flops=-5.0)
    write(root, "negative", json.dumps(neg))
    write(root, "zero_bpb", json.dumps(dict(nan, bpb=0)))
    write(root, "missing", json.dumps({k: v for k, v in nan.items() if k != "params"}))
    write(root, "old", json.dumps(dict(nan, schema_version=0)))
    write(root, "newer", json.dumps(dict(nan, schema_version=99)))
    write(root, "dup", make_results(1, bpb=1.0))
    evil = make_results(
        3,
        name='<script>alert("x")</script><img src=x onerror=alert(1)>',
        description="<b>bold</b> & </script>",
    )
    evil = evil.model_copy(
        update={"tracking": evil.tracking.model_copy(update={"wandb_url": "javascript:alert(1)"})}
    )
    write(root, "evil", evil)
    tampered = make_results(4, attested=True)
    from runner import attest

    tampered = attest.sign(tampered, keypair[0]).model_copy(update={"bpb": 0.9})
    write(root, "tampered", tampered)

    rep = build(tmp_path, root, keypair[1])
    assert rep.runs == 3  # good, evil, tampered
    text = "\n".join(rep.warnings)
    for folder in ("notjson", "nan", "negative", "zero_bpb", "missing", "old", "newer", "dup", "evil", "tampered"):
        assert f"/{folder}/results.json" in text, folder
    assert "not valid JSON" in text and "NaN is not allowed" in text
    assert "model_flops" in text and "bpb" in text and "params" in text
    assert "duplicate run_id 'run-0-00001'" in text
    assert "newer than this openlab" in text
    assert "does not verify" in text

    site = tmp_path / "site"
    everything = "".join(p.read_text() for p in site.rglob("*") if p.is_file())
    assert "<script>alert" not in everything and "<img src=x" not in everything
    html = "".join(p.read_text() for p in site.rglob("*.html"))
    assert "javascript:alert" not in html and "javascript:alert" not in (site / "data" / "table.json").read_text()
    assert "<b>bold</b>" not in everything
    evil_page = (site / "runs" / "run-0-00003.html").read_text()
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in evil_page
    table = (site / "data" / "table.json").read_text()
    assert "\\u003cscript\\u003e" in table
    assert "self-reported" in (site / "runs" / "run-0-00004.html").read_text()


def test_empty_source_builds_an_empty_site(tmp_path: Path) -> None:
    (tmp_path / "none").mkdir()
    rep = build(tmp_path, tmp_path / "none")
    assert rep.runs == 0 and any("no results.json" in w for w in rep.warnings)
    assert (tmp_path / "site" / "index.html").exists()


def test_store_url_source(tmp_path: Path) -> None:
    import fsspec

    fs = fsspec.filesystem("memory")
    for i in range(3):
        fs.pipe(f"/lbstore/runs/r{i}/results.json", dumps_results(make_results(i)).encode())
    rep = build_site(
        BuildOptions(sources=["memory://lbstore/runs"], out=tmp_path / "site", tracks=DEFAULT_TRACKS, workers=1)
    )
    assert rep.runs == 3, rep.warnings
    # Store folders are not repository paths: the code link points at the commit, not a folder.
    table = json.loads((tmp_path / "site" / "data" / "table.json").read_text())
    assert table_code(table, "run-0-00000").endswith('/tree/0123456789abcdef0123456789abcdef01234567"')


def test_parallel_build_matches_inline(tmp_path: Path, keypair) -> None:
    import re

    priv, pub = keypair
    root = tmp_path / "many"
    for i in range(450):
        write(root, f"r{i}", signed(make_results(i, attested=True), priv) if i % 5 == 0 else make_results(i))
    write(root, "dup", make_results(7))
    (root / "r300" / "metrics.jsonl").write_text('{"step": 1, "train/loss": 3}\n{"step": 2, "train/loss": 2}\nbad\n')
    opts = {"sources": [str(root)], "tracks": DEFAULT_TRACKS, "public_pem": pub}
    a = build_site(BuildOptions(out=tmp_path / "a", workers=2, **opts))
    b = build_site(BuildOptions(out=tmp_path / "b", workers=1, **opts))
    assert a.runs == b.runs == 450 and a.warnings == b.warnings and len(a.warnings) == 2
    assert len(list((tmp_path / "a" / "runs").glob("*.html"))) == 450  # and one curves file: r300 logged metrics
    assert [p.name for p in (tmp_path / "a" / "runs").glob("*.curves.js")] == ["run-0-00300.curves.js"]
    built = re.compile(r"Built \d{4}-\d\d-\d\d \d\d:\d\d UTC")
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    for f in files:
        x, y = ((tmp_path / d / f).read_text() for d in ("a", "b"))
        if f.name == "feed.xml":
            x, y = (re.sub(r"<updated>[^<]*</updated>", "", t, count=1) for t in (x, y))
        assert built.sub("", x) == built.sub("", y), f
    runs = json.loads((tmp_path / "a" / "runs.json").read_text())
    assert [r["run_id"] for r in runs][:2] == ["run-0-00007", "run-0-00000"]  # file order: dup/ sorts first


def test_cli_build_and_errors(tmp_path: Path, example_tree: Path, keypair, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(example_tree)
    (example_tree / "key.pub").write_bytes(keypair[1])
    res = CliRunner().invoke(
        main, ["leaderboard", "build", "--results", "experiments/**/results.json", "--out", "site", "--public-key", "key.pub"]
    )
    assert res.exit_code == 0, res.output
    assert "built" in res.output and "12 runs" in res.output
    res = CliRunner().invoke(main, ["leaderboard", "build", "--results", "x", "--out", "s", "--public-key", "nope.pub"])
    assert res.exit_code == 2 and "error: --public-key nope.pub: no such file" in res.output
    (example_tree / "bad.yml").write_text("tracks: [{id: x, name: x, kind: bpb_threshold}]\n")
    res = CliRunner().invoke(main, ["leaderboard", "build", "--out", "s", "--tracks", "bad.yml"])
    assert res.exit_code == 2 and "target_bpb: required" in res.output


@pytest.mark.parametrize("run_id", ["../../etc/passwd", "a/b", "x" * 300])
def test_hostile_run_ids_stay_inside_runs(tmp_path: Path, run_id: str) -> None:
    root = tmp_path / "r"
    write(root, "one", make_results(1, run_id=run_id))
    build(tmp_path, root)
    pages = list((tmp_path / "site" / "runs").iterdir())
    assert len(pages) == 1 and pages[0].parent == tmp_path / "site" / "runs"
