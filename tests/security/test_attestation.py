"""Attestations cover what the site shows: a lab-signed results.json copied with its author, affiliation, links,
remote, SHA, config or metrics changed no longer verifies; a signed copy at another path is a copy, not the run;
duplicates of a run id are reported; the verified original wins over an earlier-path copy, on the site too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.runs.results_io import attest_results
from leaderboard.load import load_runs
from leaderboard.site import BuildOptions, build_site
from leaderboard.tracks import default_tracks, parse_tracks
from runner import attest
from runner.schema import Results, dumps_results
from tests.leaderboard.factory import make_results

PATH = "experiments/speedrun/ada/results.json"


@pytest.fixture(scope="module")
def keys() -> tuple[bytes, bytes]:
    return attest.generate_keypair()


def _signed(private: bytes) -> Results:
    r = make_results(3, run_id="olr-lab-pr5-0123456-a1-feedfacecafe", name="Ada's run")
    out, _ = attest_results(r, run_id=r.run_id, sha="0123456789abcdef0123456789abcdef01234567",
                            started_at=None, finished_at=None, private_pem=private, path=PATH)
    return out


def _edit(r: Results, dotted: str, value: Any) -> Results:
    data = r.model_dump(mode="json")
    *head, last = dotted.split(".")
    node = data
    for k in head:
        node = node[k]
    node[last] = value
    return Results.model_validate(data)


@pytest.mark.parametrize("field,value", [
    ("author.name", "Mallory"), ("author.affiliation", "Evil Corp"), ("author.url", "https://evil.example"),
    ("description", "stolen"), ("tracking.wandb_url", "https://wandb.ai/evil/x/runs/1"),
    ("provenance.git_remote", "https://github.com/evil/lab.git"), ("provenance.git_sha", "f" * 40),
    ("config.train.steps", 1), ("eval.val.loss", 0.01), ("bpb", 0.5), ("attestation.path", "experiments/x/results.json"),
])
def test_every_shown_field_is_signed(keys: tuple[bytes, bytes], field: str, value: Any) -> None:
    original = _signed(keys[0])
    assert attest.verify(original, keys[1])
    assert not attest.verify(_edit(original, field, value), keys[1])


def test_copies_never_displace_the_verified_original(keys: tuple[bytes, bytes], tmp_path: Path) -> None:
    original = _signed(keys[0])
    swapped = _edit(original, "author.name", "Mallory")  # the signature is kept: it no longer matches
    files = {  # both copies sort before the original's path
        "experiments/a_swapped/results.json": swapped,
        "experiments/b_exact_copy/results.json": original,
        PATH: original,
    }
    for rel, r in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(dumps_results(r))
    source = str(tmp_path / "experiments" / "**" / "results.json")

    report = load_runs(source, public_pem=keys[1])
    [run] = report.runs
    assert run.source.endswith(PATH) and run.verification == "verified" and run.results.author.name != "Mallory"
    assert len(report.duplicates[original.run_id]) == 3
    text = "\n".join(report.warnings)
    assert "a_swapped/results.json: attestation does not verify" in text
    assert "b_exact_copy/results.json: a copy of run" in text
    assert text.count(f"duplicate run_id {original.run_id!r}") == 2 and f"(shown: {tmp_path / PATH}, verified)" in text

    site = build_site(BuildOptions(sources=[source], out=tmp_path / "site",
                                   tracks=parse_tracks(default_tracks(), "tracks"), public_pem=keys[1]))
    assert site.runs == 1 and sum("duplicate run_id" in w for w in site.warnings) == 2
    pages = [p.read_text() for p in (tmp_path / "site" / "runs").glob("*.html")]
    assert len(pages) == 1 and "Mallory" not in pages[0] and "verified" in pages[0]
