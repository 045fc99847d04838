"""Fixtures for the reproduction lifecycle: the bot-run tests' real `ray start --head`, sandbox GitHub and lab
(reused, scoped to this package so its Ray processes are gone before the next test area starts)."""

from __future__ import annotations

import pytest

from tests.bot_runs import conftest as bot_runs
from tests.runner.executor import conftest as executor_fixtures

executor_env = pytest.fixture(scope="package", autouse=True, name="executor_env")(
    executor_fixtures.executor_env.__wrapped__)
ray_head = pytest.fixture(scope="package", name="ray_head")(executor_fixtures.ray_head.__wrapped__)
lab_factory = bot_runs.lab_factory
