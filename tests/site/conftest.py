"""A small built site shared by the site tests (built once per session: the build is the slow part)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "leaderboard"))

from factory import make_results, signed  # noqa: E402

from leaderboard.site import BuildOptions, build_site  # noqa: E402
from leaderboard.tracks import DEFAULT_TRACKS  # noqa: E402
from runner import attest  # noqa: E402
from runner.schema import dumps_results  # noqa: E402


def _metrics(scale: float = 1.0) -> list[dict[str, float]]:
    out: list[dict[str, float]] = []
    for s in range(0, 201, 10):
        out.append({"step": s, "train/loss": scale * 5.0 / (1 + s / 50), "train/lr": 3e-4 * min(1, (s + 1) / 50),
                    "train/grad_norm": 1.0 + 1 / (1 + s)})
        if s % 50 == 0:
            out.append({"step": s, "eval/paloma/bpb": 2.5 - s / 200, "eval/paloma/loss": 3.0 - s / 200})
    return out


def build_small_site(root: Path) -> Path:
    """Three runs, one signed, into root/site; returns the site folder."""
    priv, pub = attest.generate_keypair()
    for i in range(3):
        r = make_results(i, attested=i == 0)
        d = root / "experiments" / f"run_{i}"
        d.mkdir(parents=True)
        (d / "results.json").write_text(dumps_results(signed(r, priv) if i == 0 else r))
        if i < 2:  # two runs log every curve the run page draws, as runner/train.py writes them (overlay)
            (d / "metrics.jsonl").write_text("\n".join(json.dumps(m) for m in _metrics(1.0 + i / 4)) + "\n")
    out = root / "site"
    build_site(BuildOptions(sources=[str(root / "experiments" / "**" / "results.json")], out=out,
                            tracks=DEFAULT_TRACKS, public_pem=pub, workers=1))
    return out


@pytest.fixture(scope="session")
def small_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_small_site(tmp_path_factory.mktemp("small-site"))
