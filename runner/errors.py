"""User-facing errors: one clear line, never a traceback.

Every command catches :class:`OpenlabError` at the CLI edge and prints ``error: <message>`` to stderr with
exit code 2. Raise it wherever bad input is detected, with a message that names the field, file or line.
"""

from __future__ import annotations


class OpenlabError(Exception):
    """An error caused by the user's input or environment, reported as one line."""

    exit_code: int = 2


class ConfigError(OpenlabError):
    """A configuration file is malformed or holds impossible values."""


class DataError(OpenlabError):
    """A dataset is missing, empty or unusable for the requested config."""


class CheckpointError(OpenlabError):
    """A checkpoint is corrupt, mismatched or cannot be written."""
