"""Record pages, the records Atom feed and the scaling-suite page of the static site, from real documents."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from leaderboard.suites import suites
from leaderboard.tracks import Tracks, default_tracks
from runner import attest
from runner.reproduction import RecordDecision, Reproduction, SeedRun, sign_reproduction, verify_reproduction
from runner.schema import dumps_results
from runner.stats import summarize

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "leaderboard"))
from factory import make_results  # noqa: E402


def doc(run_id: str, bpbs: list[float], accepted: bool, reason: str, day: int, author: str) -> Reproduction:
    return Reproduction(
        run_id=run_id, repo="lab/x", pr=day, sha=f"{day:040x}", experiment="experiments/speedrun/m/m.py", name="m",
        track="cpu", author=author, affiliation="Analytical Engines", requested_by="maint",
        seeds=[SeedRun(seed=i, step=f"s{i}", outcome="succeeded", bpb=b, model_flops=2e12) for i, b in enumerate(bpbs)],
        summary=summarize(bpbs), model_flops=2e12, tolerance_bpb=0.01, reproduces=True, verdict="reproduced",
        record=RecordDecision(accepted=accepted, reason=reason, threshold=0.01, p_value=0.001 if accepted else 0.4),
        links={"pr": f"https://github.com/lab/x/pull/{day}", "code": "https://github.com/lab/x/tree/abc/m.py",
               "wandb": "javascript:alert(1)"},
        created_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=day),
    )


def test_records_and_suites_pages(tmp_path: Path) -> None:
    priv, pub = attest.generate_keypair()
    reps = tmp_path / "store" / "reproductions"
    docs = [doc("r1", [3.30, 3.31, 3.32], True, "first record", 1, "ada"),
            doc("r2", [3.10, 3.11, 3.12], True, "beats r1", 2, "grace"),
            doc("r3", [3.40, 3.41, 3.39], False, "not a record: mean 3.4000 is not lower than record `r2`", 3, "eve")]
    for d in docs:
        (reps / d.run_id).mkdir(parents=True)
        signed = sign_reproduction(d, priv)
        assert verify_reproduction(signed, pub)
        assert not verify_reproduction(signed.model_copy(update={"author": "mallory"}), pub)
        (reps / d.run_id / "reproduction.json").write_text(signed.model_dump_json())
    (reps / "junk").mkdir()
    (reps / "junk" / "reproduction.json").write_text("{}")
    results = tmp_path / "results"
    for i, flops in enumerate([1e12, 1e13, 1e14, 1e15]):  # adamw: a 4-budget suite; muon: 3 budgets
        for method, a in (("adamw", 40.0), ("muon", 30.0)):
            if method == "muon" and i == 3:
                continue
            r = make_results(i, bpb=a * flops ** -0.1 + 1.0, model_flops=flops, name=f"{method}__b{i}",
                             run_id=f"{method}-{i}")
            (results / f"{method}{i}").mkdir(parents=True)
            (results / f"{method}{i}" / "results.json").write_text(dumps_results(r))
    key = tmp_path / "lab.pub"
    key.write_bytes(pub)
    from runner.cli import main

    res = CliRunner().invoke(main, ["leaderboard", "build", "--results", str(results / "**" / "results.json"),
                                    "--reproductions", str(reps), "--public-key", str(key), "--out",
                                    str(tmp_path / "site"), "--workers", "1"])
    assert res.exit_code == 0, res.output
    assert "junk/reproduction.json: not a reproduction document" in res.output
    site = tmp_path / "site"
    page = (site / "records" / "cpu.html").read_text()
    rows = re.findall(r'<tr class="record" data-run="(\w+)">(.*?)</tr>', page, re.S)
    assert [r[0] for r in rows] == ["r1", "r2"]
    assert "3.1100 ± 0.0248" in rows[1][1] and "-0.2000" in rows[1][1] and "grace" in rows[1][1]
    assert "Analytical Engines" in rows[1][1] and "badge verified" in rows[1][1] and "2.00e12" in rows[1][1]
    assert 'href="https://github.com/lab/x/pull/2"' in rows[1][1] and "javascript:" not in page
    assert "not lower than record `r2`" in page.split("not records")[1]
    feed = ET.fromstring((site / "records" / "feed.xml").read_text())
    ns = {"a": "http://www.w3.org/2005/Atom"}
    titles = [e.findtext("a:title", namespaces=ns) for e in feed.findall("a:entry", ns)]
    assert len(titles) == 2 and titles[0].startswith("Record on cpu: m 3.1100 ± 0.0248 BPB")
    suite = (site / "suites.html").read_text()
    assert [m for m in re.findall(r'<tr class="suite" data-method="(\w+)">', suite)] == ["muon", "adamw"]
    assert suite.count('class="curve"') == 2 and "0.1000" in suite
    assert 'href="records/index.html"' in (site / "index.html").read_text()


def test_suite_fit_slope_and_interval() -> None:
    class P:
        def __init__(self, name: str, bpb: float, model_flops: float) -> None:
            self.name, self.bpb, self.model_flops = name, bpb, model_flops

    noisy = [P(f"m__{i}", 20 * f ** -0.12 + 0.8 + e, f) for i, (f, e) in
             enumerate(zip([1e12, 1e13, 1e14, 1e15, 1e16], [0.01, -0.008, 0.004, -0.006, 0.002], strict=True))]
    (row,) = suites([*noisy, P("solo", 3.0, 1e12), P("two__a", 3.0, 1e12)])
    assert row["method"] == "m" and row["n"] == 5 and abs(row["slope"] - 0.12) < 0.05
    assert row["proj_low"] < row["projection"] < row["proj_high"] and row["slope_se"] > 0
    assert Tracks(tracks=default_tracks()).tracks


def test_fit_many_is_the_scaling_fit() -> None:
    import random

    from leaderboard.scaling import fit_power_law
    from leaderboard.suites import fit_many

    rng = random.Random(1)
    groups: list[tuple[list[float], list[float]]] = [([1.0, 1.0, 2.0], [3.0, 2.0, 1.0])]
    for _ in range(40):
        f = [1e12 * 10 ** (j / 2 + rng.random() * 0.1) for j in range(rng.randint(2, 9))]
        groups.append((f, [rng.uniform(10, 30) * x ** -rng.uniform(0.05, 0.2) + rng.uniform(0, 1.5)
                           + rng.gauss(0, 0.01) for x in f]))
    for (f, b), many in zip(groups, fit_many(groups), strict=True):
        one = fit_power_law(f, b)
        assert (one is None) == (many is None)
        if one is not None and many is not None:
            assert many.n == one.n
            for k in ("a", "b", "c", "r2"):
                assert getattr(many, k) == pytest.approx(getattr(one, k), rel=1e-5, abs=1e-9)
