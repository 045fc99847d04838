"""Shared test plumbing: uvicorn servers in threads, the sandbox repo, form bodies, an RSA App key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.ingress.serving import ServedApp, free_port  # noqa: F401 - re-exported for the tests

ROOT = Path(__file__).resolve().parents[2]
SECRET = "test-webhook-secret-1"
OLD_SECRET = "older-webhook-secret-0"
REPO = "lab/openlab"

EXPERIMENT_FILE = '''from dataclasses import dataclass

from runner.executor import Step, StepContext


@dataclass(frozen=True)
class Noop:
    text: str = "hi"


def noop(cfg: Noop, ctx: StepContext) -> dict:
    return {}


STEPS = [Step("expNUM/noop", noop, Noop(), version="v1")]
'''


# One served-app helper for the bot, the demo and every test (real HTTP on loopback).
ServerThread = ServedApp


def repo_files() -> dict[str, str]:
    """The lab repo as the sandbox serves it: our own openlab.yml and issue forms."""
    files = {p: (ROOT / p).read_text() for p in (
        ".github/openlab.yml", ".github/ISSUE_TEMPLATE/experiment.yml", ".github/ISSUE_TEMPLATE/speedrun.yml")}
    files["README.md"] = "# lab\n"
    return files


def experiment_body(flops: str = "3e16", track: str = "budget_1e17", hypothesis: str = "Wider MLPs help.") -> str:
    return (f"### Hypothesis\n\n{hypothesis}\n\n### Goal and success criterion\n\nBPB below 1.2\n\n"
            f"### Planned compute budget (FLOPs)\n\n{flops}\n\n### Track\n\n{track}\n\n### Baseline\n\n_No response_\n\n"
            "### Risks\n\n_No response_\n\n### Related issues\n\n_No response_\n")


def speedrun_body(starter: bool = True) -> str:
    box = "X" if starter else " "
    return ("### Author name\n\nAda\n\n### Affiliation\n\n_No response_\n\n### URL\n\nhttps://example.org/ada\n\n"
            "### Description\n\nA faster tiny run.\n\n### Track\n\nbudget_1e15\n\n### Planned FLOPs\n\n1e14\n\n"
            f"### Starter branch\n\n- [{box}] Create a starter branch and draft PR for me\n")


def bot_comments(thread: dict[str, Any], kind: str | None = None) -> list[dict[str, Any]]:
    """The bot's comments; with ``kind``, those of that kind, including the sections of the sticky PR comment
    (``bot.sticky``: plan, runs, run, pareto), each given as ``{**comment, "body": section}``."""
    from bot.sticky import section_of

    out = [c for c in thread["comments"] if c["user"] == "openlab[bot]"]
    if not kind:
        return out
    found = [c for c in out if c["body"].startswith(f"<!-- openlab:{kind}:")]
    for c in out:
        if c["body"].startswith("<!-- openlab:pr:") and kind != "pr":
            found += [{**c, "body": s} for s in section_of(c["body"], kind)]
    return found


def rsa_pair() -> tuple[str, str]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


def experiment_file(n: int) -> str:
    return EXPERIMENT_FILE.replace("NUM", str(n))
