"""The run-lifecycle fixtures of tests/bot_runs (a real Ray head, the GitHub sandbox, the served bot), reused."""

from tests.bot_runs.conftest import executor_env, lab_factory, ray_head  # noqa: F401
