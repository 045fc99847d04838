"""Bad experiment files and bad environments: one `error:` line naming the file, line and step; exit 2."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.cli import main

HEAD = """\
from dataclasses import dataclass
from runner.executor import Step, ref

@dataclass(frozen=True)
class C:
    path: str = ""
    n: int = 0

def f(cfg, ctx):
    return None
"""


def _cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.output + (res.stderr if res.stderr_bytes is not None else "")


def _write(tmp_path: Path, body: str, name: str = "exp9_bad.py") -> Path:
    p = tmp_path / name
    p.write_text(HEAD + textwrap.dedent(body))
    return p


CASES = [
    ("a = Step('a', f, C())\nSTEPS = [a\n", r"exp9_bad.py:1[0-9]: syntax error"),
    (
        "import nope_not_a_module\nSTEPS = []\n",
        r"exp9_bad.py:11: import error: No module named 'nope_not_a_module'",
    ),
    ("x = 1 / 0\n", r"exp9_bad.py:11: ZeroDivisionError: division by zero"),
    ("a = Step('a', f, C())\n", r"exp9_bad.py: defines no STEPS"),
    ("STEPS = [3]\n", r"STEPS\[0\] is a int, not a Step"),
    ("a = Step('a b', f, C())\n", r"exp9_bad.py:11: step name 'a b'"),
    (
        "a = Step('a', f, C(n=1))\nb = Step('b', f, C(a.output()))\na2 = Step('a', f, C(n=2))\n"
        "c = Step('c', f, C(a2.output()))\nSTEPS = [b, c]\n",
        r"exp9_bad.py:1[0-9]: step a@v1 is declared twice with different configs \(first at .*exp9_bad.py:1[0-9]\):"
        r" config.n: [12] -> [12]",
    ),
    (
        "x = Step('x', f, C(ref('y@v1')))\ny = Step('y', f, C(x.output()))\nx.output()\nSTEPS = [y]\n",
        r"exp9_bad.py:1[12]: dependency cycle: ",
    ),
    (
        "t = Step('train', f, C(ref('tok/other@v1', 'train')))\nSTEPS = [t]\n",
        r"exp9_bad.py:11: step train@v1 reads tok/other@v1, which this experiment does not declare and which is"
        r" not SUCCESS at .*/tok/other/v1 \(found nothing\)",
    ),
]


@pytest.mark.parametrize(("body", "pattern"), CASES)
def test_plan_reports_bad_files(tmp_path: Path, body: str, pattern: str) -> None:
    exp = _write(tmp_path, body)
    code, out = _cli("plan", str(exp), "--prefix", str(tmp_path / "store"))
    assert code == 2, out
    assert out.startswith("error: "), out
    assert "Traceback" not in out
    import re

    assert re.search(pattern, out), out
    assert not (tmp_path / "store").exists() or not list((tmp_path / "store").rglob(".status.json"))


def test_missing_file() -> None:
    code, out = _cli("plan", "/nonexistent/exp.py")
    assert code == 2 and "no such experiment file" in out


def test_unreachable_ray_address(tmp_path: Path) -> None:
    exp = _write(tmp_path, "STEPS = [Step('a', f, C())]\n")
    code, out = _cli("run", str(exp), "--prefix", str(tmp_path / "s"), "--ray", "127.0.0.1:9")
    assert code == 2 and "cannot reach Ray at 127.0.0.1:9" in out, out
    assert not list((tmp_path / "s").rglob(".status.json"))


def test_unwritable_prefix(tmp_path: Path) -> None:
    exp = _write(tmp_path, "STEPS = [Step('a', f, C())]\n")
    (tmp_path / "file").write_text("")
    code, out = _cli("run", str(exp), "--prefix", str(tmp_path / "file" / "sub"))
    assert code == 2 and "storage prefix" in out and "not writable" in out, out


def test_unreachable_jobs_api() -> None:
    code, out = _cli("status", "some-run", "--ray", "http://127.0.0.1:9")
    assert code == 2 and "cannot reach Ray" in out, out


def test_real_console_script_prints_one_line(tmp_path: Path) -> None:
    exp = _write(tmp_path, "import nope_not_a_module\n")
    res = subprocess.run(
        [str(Path(sys.executable).parent / "openlab"), "plan", str(exp)], capture_output=True, text=True
    )
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"error: {exp}:11: import error: No module named 'nope_not_a_module'"
    ]


def test_memory_prefix_cannot_run_on_ray(tmp_path: Path) -> None:
    exp = _write(tmp_path, "STEPS = [Step('a', f, C())]\n")
    code, out = _cli("run", str(exp), "--prefix", "memory://x/steps")
    assert code == 2 and "memory:// is per process" in out, out
