"""A hostile experiment file tries to exhaust the bot: processes, memory, CPU, output, and children that linger.

Each test asserts the plan comes back within its limits with an error saying which, nothing the sandbox started
is left running, and the host still starts processes (``host_unharmed``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.plans.sandbox import materialise
from runner.sandbox import Limits
from tests.security.conftest import EXPERIMENT, VALID_TAIL, Attack

pytestmark = pytest.mark.usefixtures("host_unharmed")


def _running_with(marker: str) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and marker.encode() in (d / "cmdline").read_bytes():
                out.append(int(d.name))
        except OSError:
            continue
    return out


def test_fork_storm(plan_attack: Callable[..., Attack]) -> None:
    src = ("import os, sys, time\nn = 0\nwhile True:\n    try:\n        if os.fork() == 0:\n"
           "            time.sleep(60)\n            os._exit(0)\n        n += 1\n    except OSError:\n        break\n"
           "sys.exit(f'FORKS {n}')\n")
    a = plan_attack(src)
    assert a.outcome.error is not None and a.outcome.error.startswith("FORKS "), a.outcome.error
    # the rlimit stopped it, not the host (as a plain user the bound also counts what else that user runs)
    assert int(a.outcome.error.split()[1]) < 2 * Limits().nproc


def test_20_gb_allocation(plan_attack: Callable[..., Attack]) -> None:
    a = plan_attack("x = bytearray(20 << 30)\n")  # the bot's own 4 GiB limit
    assert a.outcome.error is not None and "MemoryError" in a.outcome.error


def test_endless_loop(plan_attack: Callable[..., Attack]) -> None:
    a = plan_attack("while True:\n    pass\n", timeout_s=2)
    assert a.outcome.error == "timed out after 2s" and a.elapsed_s < 12


def test_megabytes_of_output(plan_attack: Callable[..., Attack]) -> None:
    a = plan_attack("import sys\nsys.stdout.write('x' * (8 << 20))\nsys.stdout.flush()\n")
    assert a.outcome.error == f"printed more than {Limits().output_bytes} bytes: stopped"
    assert len(a.posted) < 20_000


def test_setsid_child_holding_stdout(plan_attack: Callable[..., Attack]) -> None:
    """The plan itself succeeds; its detached child keeps stdout open for a minute. We do not wait for it."""
    src = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n    os._exit(0)\n" + VALID_TAIL
    a = plan_attack(src, timeout_s=15)
    assert a.outcome.plan is not None, a.outcome.error
    assert a.elapsed_s < 12


def test_double_forked_child_does_not_survive(plan_attack: Callable[..., Attack]) -> None:
    marker = f"{uuid.uuid4().int % 10**6}.5"
    src = (f"import os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
           f"        os.execv('/usr/bin/sleep', ['sleep', '{marker}'])\n    os._exit(0)\nimport time\ntime.sleep(0.5)\n"
           + VALID_TAIL)
    a = plan_attack(src)
    assert a.outcome.plan is not None, a.outcome.error
    assert _running_with(marker) == []


def test_1_gb_of_output_costs_bounded_memory(tmp_path: Path) -> None:
    """Planned in a fresh interpreter: the peak RSS grows by the bounded read, far below the gigabyte printed."""
    src = "import sys\nchunk = b'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.buffer.write(chunk)\n"
    root = materialise({EXPERIMENT: src}, tmp_path / "checkout")
    probe = ("import json, resource, sys\nfrom pathlib import Path\nfrom runner.sandbox import Limits\n"
             "from runner.sandbox_plan import plan_checkout\n"
             "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
             f"o = plan_checkout(Path({str(root)!r}), {EXPERIMENT!r}, Limits(timeout_s=30))\n"
             "print(json.dumps([o.error, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before]))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OPENLAB_PLAN_SANDBOX": "bwrap"})
    error, grown_kb = json.loads(out.stdout.strip().splitlines()[-1])
    assert error == f"printed more than {Limits().output_bytes} bytes: stopped"
    assert grown_kb < 100 * 1024, f"peak RSS grew {grown_kb} KiB while planning"


def test_oversized_plan_is_refused_before_posting(plan_attack: Callable[..., Attack]) -> None:
    """The plan is data: a forged one with a 5,000-character step name is refused by the bounded schema."""
    step = {"name": "n" * 5000, "version": "v1", "identity": "x@v1", "kind": "train", "fingerprint": "f",
            "config": {}, "dependencies": [], "output_path": "o", "action": "run", "reason": "r"}
    plan = {"experiment": "experiments/exp001_attack.py", "prefix": "p", "steps": [step]}
    src = f"import os, sys\nsys.stdout.write({json.dumps(plan)!r})\nsys.stdout.flush()\nos._exit(0)\n"
    a = plan_attack(src)
    assert a.outcome.plan is None and a.outcome.error is not None
    assert a.outcome.error.startswith("plan output is not a valid Plan: steps.0.name")
    assert "n" * 600 not in a.posted
