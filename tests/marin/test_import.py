"""`openlab leaderboard import` on Marin's real result files (every format), then the site built from them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from leaderboard.marin_import import REPORT_NAME, import_results
from runner.cli import main
from runner.schema import ImportedResults, ResultsError, loads_any_results

FIX = Path(__file__).parent / "fixtures"
MARIN = FIX / "marin"

# Marin's first format, as marin/speedrun/speedrun.py wrote it before PR #1289 (no such file is left in
# Marin's tree; SOURCES.md). training_time_in_minutes holds seconds: the producer sums step durations.
OLD_FORMAT = {
    "runs": [
        {
            "run_related_info": {
                "num_parameters": 154147328,
                "total_tokens": 2599944192,
                "model_config": {"hidden_dim": 512, "num_layers": 6},
                "train_config": {"train_batch_size": 128, "num_train_steps": 4959},
                "tokenized_dataset": "gs://marin-us-central2/tokenized/subcache/fineweb-edu-10B-6fbcbb",
                "resources": {"tpu_type": "v4-128", "slice_count": 1},
                "run_completion_timestamp": "2025-04-30 12:00:00 UTC",
                "wandb_run_link": "https://wandb.ai/marin-community/marin/runs/old-abc123",
            },
            "run_stats": {
                "pre_run_flops_estimate": 2.4e18,
                "training_time_in_minutes": 1125.39,
                "total_training_flops": 1.65e19,
                "eval/paloma/c4_en/bpb": 1.19,
            },
        }
    ]
}
# The oldest version: FLOPs as formatted strings, hardware_config, the submitter as a plain string.
OLDEST_FORMAT = {
    "runs": [
        {
            "run_related_info": {
                "num_parameters": 30000000,
                "total_tokens": 1000000000,
                "hardware_config": {"device_type": "v4", "num_devices": 8, "device_flops": 275e12},
                "submitted_by": "herumb",
                "wandb_link": "https://wandb.ai/marin-community/marin/runs/tiny-1",
            },
            "run_stats": {
                "pre_run_flops_estimate": "1.80e+17",
                "training_time_in_minutes": 100.0,
                "final_flops_estimate": "2.20e+17",
                "eval/paloma/c4_en/bpb": 1.6,
            },
        }
    ]
}

# The short-lived middle format: runs[].speedrun_config, author a string, training time really in minutes.
MIDDLE_FORMAT = {
    "runs": [
        {
            "speedrun_config": {
                "author": "marin-community",
                "affiliation": "Stanford",
                "description": "middle format",
                "model_size": 30000000,
                "total_tokens": 1000000000,
                "model_flops": 1.5e17,
                "training_time_in_minutes": 10.0,
                "training_hardware_flops": 3.3e18,
                "run_completion_timestamp": "2025-05-10 08:00:00 UTC",
                "wandb_run_link": "https://wandb.ai/marin-community/marin/runs/mid-1",
                "eval/paloma/c4_en/bpb": 1.5,
            }
        }
    ]
}


@pytest.fixture
def marin_tree(tmp_path: Path) -> Path:
    """Marin's real files plus old-format and broken ones, laid out as in Marin's repository."""
    root = tmp_path / "marin"
    shutil.copytree(MARIN, root)
    sr = root / "experiments" / "speedrun"
    for name, data in {"old_130m": OLD_FORMAT, "oldest_30m": OLDEST_FORMAT, "mid_30m": MIDDLE_FORMAT}.items():
        (sr / name).mkdir(parents=True)
        (sr / name / "speedrun_results.json").write_text(json.dumps(data))
    (sr / "broken_bpb").mkdir()
    broken = json.loads((MARIN / "experiments/speedrun/llama_75m/speedrun_results.json").read_text())
    broken["runs"][0]["run_info"]["eval/paloma/c4_en/bpb"] = "n/a"
    (sr / "broken_bpb" / "speedrun_results.json").write_text(json.dumps(broken))
    (sr / "not_json").mkdir()
    (sr / "not_json" / "speedrun_results.json").write_text("{runs: [")
    (sr / "unknown").mkdir()
    (sr / "unknown" / "speedrun_results.json").write_text(json.dumps({"runs": [{"metrics": {}}]}))
    return root


def _load(out: Path, name: str) -> ImportedResults:
    r = loads_any_results((out / "experiments/speedrun" / name / "results.json").read_bytes())
    assert isinstance(r, ImportedResults)
    return r


def test_import_every_marin_format(marin_tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    report = import_results(marin_tree, out, repo="marin-community/marin", commit="75d9c2c7145840672fde728c374fe4aad80dc141")
    by_path = {f.path.split("speedrun/", 1)[1]: f for f in report.files}
    assert report.imported == 6
    # Current format, as Marin wrote it: nothing lost, nothing invented.
    r = _load(out, "llama_75m")
    assert (r.bpb, r.model_flops, r.hardware_flops) == (1.2788727283477783, 8.43291058765824e17, 8.089714419511836e18)
    assert (r.params, r.tokens, r.training_seconds) == (73273600, 3145728000, 459.6428647449907)
    assert r.author is not None and (r.author.name, r.author.affiliation) == ("Nikil Ravi", "Stanford University")
    assert r.wandb_url == "https://wandb.ai/marin-community/marin/runs/llama_75m-57f46a"
    assert r.finished_at is not None and r.finished_at.isoformat() == "2025-05-19T10:30:03+00:00"
    assert r.resources == {"device_flops_override": None, "slice_count": 1, "tpu_type": "v4-128"}
    assert r.model_flops_per_token is None and r.num_chips is None  # v1 file: not recorded, so not made up
    assert r.source.path == "experiments/speedrun/llama_75m/speedrun_results.json"
    assert r.source.format == "marin-run_info" and r.source.repo == "marin-community/marin"
    # The real variants come in as runs of their own beside the main file's folder.
    v = _load(out, "hackable_transformer_attn_gate/lr_x2/1_2b-v5p64")
    assert (v.num_chips, v.model_flops_per_token, v.bpb) == (32, 2877292544.0, 0.9119555354118347)
    sep = _load(out, "hackable_transformer_attn_gate/lr_x2/130m-sep")
    assert sep.name == "hackable_transformer_attn_gate/lr_x2/130m-sep" and sep.hardware_flops == 2.2567819351742386e19
    # First format: seconds kept as seconds, the 6ND estimate kept as such, no model FLOPs invented.
    old = _load(out, "old_130m")
    assert (old.training_seconds, old.flops_6nd, old.hardware_flops, old.model_flops) == (1125.39, 2.4e18, 1.65e19, None)
    assert old.source.format == "marin-run_related_info" and old.wandb_url.endswith("/old-abc123")
    oldest = _load(out, "oldest_30m")
    assert (oldest.hardware_flops, oldest.flops_6nd, oldest.author.name) == (2.2e17, 1.8e17, "herumb")
    assert oldest.resources == {"device_type": "v4", "num_devices": 8, "device_flops": 275e12}
    mid = _load(out, "mid_30m")
    assert (mid.training_seconds, mid.model_flops, mid.author.affiliation) == (600.0, 1.5e17, "Stanford")
    # Bad files: one message each naming the file and the field; nothing written for them.
    assert any("'eval/paloma/c4_en/bpb'" in e for e in by_path["broken_bpb/speedrun_results.json"].errors)
    assert "not valid JSON" in by_path["not_json/speedrun_results.json"].errors[0]
    assert "not a Marin results file" in by_path["unknown/speedrun_results.json"].errors[0]
    for bad in ("broken_bpb", "not_json", "unknown"):
        assert not (out / "experiments/speedrun" / bad).exists()
    assert "runs[*].run_info.model_flops" in by_path["llama_75m/speedrun_results.json"].kept
    saved = json.loads((out / REPORT_NAME).read_text())
    assert saved["imported"] == 6 and saved["failed"] == 3


def test_cli_import_then_build_shows_imported_on_frontier(marin_tree: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out, site = tmp_path / "imported", tmp_path / "site"
    res = runner.invoke(main, ["leaderboard", "import", str(marin_tree), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "llama_75m/speedrun_results.json: marin-run_info: 1 run(s) imported" in res.output
    assert "broken_bpb/speedrun_results.json" in res.output and "imported 6 run(s)" in res.output
    res = runner.invoke(
        main, ["leaderboard", "build", "--results", str(out), "--out", str(site), "--tracks", str(tmp_path / "none.yml")]
    )
    assert res.exit_code == 0, res.output
    assert "built" in res.output and "6 runs" in res.output
    frontier = json.loads((site / "tracks" / "all" / "frontier.json").read_text())
    ids = {r["run_id"] for ax in ("model_flops", "hardware_flops") for r in frontier[ax]}
    assert "imported/hackable_transformer_attn_gate/lr_x2/1_2b-v5p64" in ids  # lowest BPB: on both frontiers
    page = next((site / "runs").glob("imported_llama_75m*.html")).read_text()
    assert '<h1>llama_75m <span class="badge imported">imported</span></h1>' in page and "llama_75m-57f46a" in page
    runs = (site / "runs.json").read_text()
    assert '"kind": "imported"' in runs or '"kind":"imported"' in runs


def test_cli_import_nothing_usable(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "runs.json").write_text("[1, 2]")
    res = CliRunner().invoke(main, ["leaderboard", "import", str(tmp_path / "src"), "--out", str(tmp_path / "o")])
    assert res.exit_code != 0 and "nothing imported" in res.output and "Traceback" not in res.output
    with pytest.raises(ResultsError, match="no such file"):
        import_results(tmp_path / "missing", tmp_path / "o")
