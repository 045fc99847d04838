"""Speedrun tracks as data, accelerator resources, and Marin's llama_75m speedrun planned in openlab."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.cli import main
from runner.config import RunConfig
from runner.errors import ConfigError, DataError
from runner.executor import StepContext
from runner.speedrun import SpeedrunResources, builtin_tracks, default_speedrun, load_speedrun_tracks

FIX = Path(__file__).parent / "fixtures"
LLAMA_75M = FIX / "llama_75m" / "llama_75m.py"
MARIN_RESULT = FIX / "marin/experiments/speedrun/llama_75m/speedrun_results.json"

TINY = {
    "name": "t",
    "model": {"hidden_dim": 32, "intermediate_dim": 64, "num_layers": 2, "num_heads": 4, "num_kv_heads": 2,
              "seq_len": 32, "vocab_size": 264, "compute_dtype": "float32"},
    "train": {"batch_size": 8, "steps": 4, "log_every": 1},
}


def test_marin_llama_75m_plans_with_its_tpu_and_marins_flops() -> None:
    res = CliRunner().invoke(main, ["plan", str(LLAMA_75M)])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.output[res.output.index("{"):])
    marin = json.loads(MARIN_RESULT.read_text())["runs"][0]["run_info"]
    # The FLOPs Marin recorded for this very run: same formula, same llama3 vocabulary, same tokens.
    assert plan["total_model_flops"] == pytest.approx(marin["model_flops"], rel=1e-12)
    assert plan["total_tokens"] == marin["total_tokens"]
    tok, trained, results = plan["steps"]
    assert tok["identity"] == "tokenized/fineweb_edu@v1" and tok["resources"] == {"CPU": 1.0}
    assert trained["resources"] == {"CPU": 1.0, "TPU-v4-128-head": 1.0, "TPU": 4.0}
    run = trained["config"]["run"]
    assert run["train"]["seed"] == 42 and run["model"]["vocab_size"] == 128256
    assert run["data"]["tokenizer"] == "hf:marin-community/marin-tokenizer"
    assert run["data"]["source"]["hf"] == {"name": "HuggingFaceFW/fineweb-edu", "revision": "3c452cb",
                                           "config": "sample-10BT", "split": "train", "text_field": "text",
                                           "max_documents": None}
    assert [s["name"] for s in run["eval"]["sets"]] == ["paloma_c4_en"]
    assert results["dependencies"] == [trained["identity"]]


def test_fineweb_edu_refuses_clearly_where_its_data_is_unreachable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty Hub cache: nothing to fall back on
    config = RunConfig.model_validate({**TINY, "track": "fineweb_edu"})
    tok = default_speedrun("t", config)[0]
    ctx = StepContext(name=tok.name, version=tok.version, output_path=str(tmp_path / "tok"), run_id="r", dep_paths={})
    with pytest.raises(DataError, match=r"data\.tokenizer: cannot fetch tokenizer\.json of marin-community/marin-tokenizer"):
        tok.fn(tok.config, ctx)


def test_tracks_file_adds_and_replaces_tracks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("openlab tracks are data. " * 200)
    gh = tmp_path / ".github"
    gh.mkdir()
    (gh / "speedrun_tracks.yml").write_text(
        "tracks:\n"
        "  notes:\n"
        "    source: {paths: [notes.txt]}\n"
        "    eval: {sets: [{name: held_out}]}\n"
        "    seed: 7\n"
        "    budgets: [1.0e+12, 1.0e+14]\n"
        "  mix:\n"
        "    mixture:\n"
        "      - {name: docs, source: {builtin: pydoc}, weight: 3}\n"
        "      - {name: notes, source: {paths: [notes.txt]}, weight: 1}\n"
        "    eval: {sets: [{name: notes, source: {paths: [notes.txt]}}]}\n"
    )
    tracks = load_speedrun_tracks()
    assert {"cpu", "fineweb_edu", "notes", "mix"} <= set(tracks)
    assert tracks["mix"].weights() == {"docs": 0.75, "notes": 0.25}
    assert tracks["notes"].budget_band(5e13) == 1e14 and tracks["notes"].budget_band(1e15) is None
    steps = default_speedrun("t", RunConfig.model_validate({**TINY, "track": "notes"}))
    run = steps[1].config.run
    assert run.train.seed == 7 and run.data.source.paths == ["notes.txt"] and run.eval.sets[0].name == "held_out"
    mixed = default_speedrun("t", RunConfig.model_validate({**TINY, "track": "mix"}))
    assert mixed[1].config.run.data.weights() == {"docs": 0.75, "notes": 0.25}
    assert mixed[0].config.data.mixture == mixed[1].config.run.data.mixture  # one cache step for both parts
    with pytest.raises(ConfigError, match=r"'nope' is not a speedrun track .*\.github/speedrun_tracks\.yml"):
        default_speedrun("t", RunConfig.model_validate({**TINY, "track": "nope"}))
    (gh / "speedrun_tracks.yml").write_text(
        "tracks:\n  bad:\n    source: {hf: {name: x/y, revision: main}}\n"
    )
    with pytest.raises(ConfigError, match=r"speedrun_tracks\.yml.*revision: pin a commit"):
        load_speedrun_tracks()
    (gh / "speedrun_tracks.yml").write_text(
        "tracks:\n  bad:\n    mixture: [{name: a, source: {builtin: pydoc}, weight: 1}]\n"
    )
    with pytest.raises(ConfigError, match=r"a mixture track's eval sets each need a source"):
        load_speedrun_tracks()
    (gh / "speedrun_tracks.yml").write_text("tracks:\n  bad:\n    source: {builtin: pydoc}\n    seeed: 1\n")
    with pytest.raises(ConfigError, match=r"speedrun_tracks\.yml.*seeed"):
        load_speedrun_tracks()
    assert "cpu" in builtin_tracks()


def test_resources_for_gpus_and_tpu_slices() -> None:
    gpu = SpeedrunResources.with_gpu("H100", count=8)
    assert gpu.to_resources().flat() == {"CPU": 1.0, "GPU": 8.0, "accelerator_type:H100": 0.001}
    assert gpu.chips() == 8
    tpu = SpeedrunResources.with_tpu("v5p-64", slice_count=2)
    assert tpu.chips() == 64 and tpu.to_resources().flat()["TPU-v5p-64-head"] == 2.0
    assert SpeedrunResources.with_tpu("v6e-8").chips() == 8
    with pytest.raises(ValueError, match="not both"):
        SpeedrunResources(gpu_count=1, tpu_type="v4-8")
    steps = default_speedrun("t", RunConfig.model_validate({**TINY, "track": "cpu"}), resources=gpu)
    assert steps[1].resources.ray_options() == {"num_cpus": 1.0, "num_gpus": 8.0,
                                                "resources": {"accelerator_type:H100": 0.001}}
    assert steps[0].resources.gpus == 0  # tokenization stays on CPU
