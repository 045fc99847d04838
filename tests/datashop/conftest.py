"""Fixtures for the Datashop tests: one loaded SmolLM2-135M-Instruct per session (loading takes seconds)."""

from __future__ import annotations

import pytest

from runner.pretrained import Pretrained, load_cached


@pytest.fixture(scope="session")
def smol() -> Pretrained:
    return load_cached()
