"""The plan command as it runs inside the plan sandbox: ``python -I -m runner.sandbox_plan_entry plan FILE``.

Its own module (not :mod:`runner.sandbox_plan`) because it runs the `openlab plan` click command of
:mod:`runner.executor_cli`, which itself calls :func:`runner.sandbox_plan.plan_checkout` for ``--sandbox``: kept
apart, neither imports the other. Only ``runner`` is visible in the sandbox, so no ``openlab`` plugins load.
"""

from __future__ import annotations

import sys

from runner.errors import OpenlabError
from runner.executor_cli import plan


def main(argv: list[str]) -> None:
    """Inside the sandbox: run ``openlab plan FILE``; an OpenlabError is one line on stderr and exit status 2."""
    if argv[:1] != ["plan"] or len(argv) != 2:
        print("usage: python -m runner.sandbox_plan_entry plan EXPERIMENT.py", file=sys.stderr)
        sys.exit(2)
    try:
        plan.main(argv[1:], prog_name="openlab plan", standalone_mode=True)
    except OpenlabError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
