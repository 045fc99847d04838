from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from factory import make_results, signed  # noqa: E402

from runner import attest  # noqa: E402
from runner.schema import Results, dumps_results  # noqa: E402


@pytest.fixture(scope="session")
def keypair() -> tuple[bytes, bytes]:
    return attest.generate_keypair()


def write(root: Path, folder: str, results: Results | str) -> Path:
    d = root / folder
    d.mkdir(parents=True, exist_ok=True)
    p = d / "results.json"
    p.write_text(results if isinstance(results, str) else dumps_results(results))
    return p


@pytest.fixture
def example_tree(tmp_path: Path, keypair: tuple[bytes, bytes]) -> Path:
    """A small realistic results tree: singles, a scaling group, signed runs, one metrics.jsonl."""
    priv, _ = keypair
    root = tmp_path / "experiments" / "speedrun"
    for i in range(8):
        r = make_results(i, attested=i % 3 == 0)
        write(root, f"single_{i}", signed(r, priv) if i % 3 == 0 else r)
    for k, size in enumerate(["s1", "s2", "s3", "s4"]):
        f = 1e14 * 10**k
        write(root, f"adamw_scaling/{size}", make_results(100 + k, model_flops=f, bpb=round(3.0 * (f / 1e14) ** -0.05 + 0.5, 4)))
    (root / "single_0" / "metrics.jsonl").write_text(
        "\n".join(f'{{"step": {s}, "train/loss": {5.0 / (1 + s / 50):.4f}}}' for s in range(0, 500, 10)) + "\nnot json\n"
    )
    return tmp_path
