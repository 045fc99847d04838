"""`openlab doctor`: a healthy local deployment passes; breaking each setting fails its own check with a fix."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bot.adopt.doctor import (
    FAIL,
    OK,
    Context,
    check_app_key,
    check_ledger,
    check_ray,
    check_sandbox,
    check_signing_key,
    check_store,
    check_wandb,
    check_webhook_secrets,
    run_checks,
)
from runner import attest
from runner.cli import main


@pytest.fixture
def healthy(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "lab"
    (repo / ".github").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "app.pem"
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    priv, pub = attest.generate_keypair()
    (repo / ".github/openlab.pub").write_bytes(pub)
    (repo / ".github/openlab.yml").write_text("site_url: https://lab.example.org/\n")
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "OPENLAB_WEBHOOK_SECRETS": "a-long-random-webhook-secret",
        "OPENLAB_APP_ID": "12345",
        "OPENLAB_PRIVATE_KEY_PATH": str(pem),
        "OPENLAB_SIGNING_KEY": priv.decode(),
        "OPENLAB_STORAGE_PREFIX": str(tmp_path / "store"),
        "OPENLAB_LEDGER_URL": f"sqlite:///{tmp_path}/ledger.sqlite3",
        "WANDB_MODE": "online",
        "WANDB_API_KEY": "x" * 40,
    }
    return repo, env


def statuses(repo: Path, env: dict[str, str], mode: str = "app") -> dict[str, str]:
    return {c.name: c.status for c in run_checks(Context(root=repo, mode=mode, env=env))}


def test_a_healthy_deployment_passes(healthy: tuple[Path, dict[str, str]]) -> None:
    repo, env = healthy
    got = statuses(repo, env)
    assert got.pop("Ray") == "warn"  # no cluster configured: embedded Ray (tested broken below)
    assert set(got.values()) == {OK}, got


BREAKS = {
    "webhook secrets": [{"OPENLAB_WEBHOOK_SECRETS": ""}, {"OPENLAB_WEBHOOK_SECRETS": "development"}],
    "GitHub App key": [{"OPENLAB_APP_ID": ""}, {"OPENLAB_PRIVATE_KEY_PATH": "/nonexistent.pem"},
                       {"OPENLAB_APP_ID": "my-app"}, {"_garble_app_key": "1"}],
    "signing key": [{"OPENLAB_SIGNING_KEY": "not a pem"}, {"_other_signing_key": "1"}],
    "Ray": [{"RAY_ADDRESS": "http://127.0.0.1:9", "RAY_AUTH_TOKEN": "t" * 20},
            {"RAY_ADDRESS": "http://127.0.0.1:9"}],
    "store": [{"OPENLAB_STORAGE_PREFIX": "/proc/openlab-cannot-write-here"}],
    "plan sandbox": [{"PATH": "/nonexistent"}],
    "W&B": [{"WANDB_API_KEY": ""}, {"WANDB_MODE": "sometimes"}],
    "ledger": [{"OPENLAB_LEDGER_URL": "sqlite:////nonexistent/dir/ledger.sqlite3"},
               {"OPENLAB_LEDGER_URL": "postgresql+psycopg://u:hunter2@127.0.0.1:9/lab"}],
}


BY_NAME = {
    "webhook secrets": check_webhook_secrets, "GitHub App key": check_app_key, "signing key": check_signing_key,
    "Ray": check_ray, "store": check_store, "plan sandbox": check_sandbox, "W&B": check_wandb, "ledger": check_ledger,
}


@pytest.mark.parametrize(("check", "change"), [(k, c) for k, cs in BREAKS.items() for c in cs],
                         ids=[f"{k}-{i}" for k, cs in BREAKS.items() for i in range(len(cs))])
def test_breaking_a_setting_fails_its_check(healthy: tuple[Path, dict[str, str]], check: str,
                                            change: dict[str, str]) -> None:
    repo, env = healthy
    env = {**env, **change}
    if "_garble_app_key" in change:
        Path(env["OPENLAB_PRIVATE_KEY_PATH"]).write_text("-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----\n")
    if "_other_signing_key" in change:
        env["OPENLAB_SIGNING_KEY"] = attest.generate_keypair()[0].decode()
    got = BY_NAME[check](Context(root=repo, mode="app", env=env))  # the others pass: test_a_healthy_deployment
    assert got.name == check and got.status == FAIL, got
    assert got.fix
    assert "hunter2" not in got.detail


def test_site_url_and_openlab_yml(healthy: tuple[Path, dict[str, str]]) -> None:
    repo, env = healthy
    (repo / ".github/openlab.yml").write_text("approval_lable: go\n")
    checks = {c.name: c for c in run_checks(Context(root=repo, mode="app", env=env))}
    assert checks["openlab.yml"].status == FAIL and "approval_lable" in checks["openlab.yml"].detail
    assert checks["site URL"].status == "warn"


def test_actions_mode_needs_postgres_not_webhook_secrets(healthy: tuple[Path, dict[str, str]]) -> None:
    repo, env = healthy
    got = statuses(repo, {**env, "OPENLAB_WEBHOOK_SECRETS": "", "OPENLAB_APP_ID": ""}, mode="actions")
    assert got["webhook secrets"] == OK and got["GitHub App key"] == OK
    assert got["ledger"] == FAIL  # SQLite does not outlive a job


def test_cli_prints_one_table_and_exits_1_on_failure(healthy: tuple[Path, dict[str, str]],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    repo, env = healthy
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("OPENLAB_WEBHOOK_SECRETS", "")
    res = CliRunner().invoke(main, ["doctor", "--repo", str(repo), "--mode", "app"])
    assert res.exit_code == 1, res.output
    assert "webhook secrets  FAIL" in res.output and "fix: set OPENLAB_WEBHOOK_SECRETS" in res.output
    assert "Traceback" not in res.output


def test_postgres_without_its_driver_names_the_extra(healthy: tuple[Path, dict[str, str]]) -> None:
    import importlib.util

    if importlib.util.find_spec("psycopg") is not None:
        pytest.skip("psycopg is installed here: the missing-driver message cannot be shown")
    repo, env = healthy
    got = check_ledger(Context(root=repo, mode="app", env={**env, "OPENLAB_LEDGER_URL": "postgresql+psycopg://u:pw@h/db"}))
    assert got.status == FAIL and "pip install 'openlab[postgres]'" in got.detail
