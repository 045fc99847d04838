"""The plan sandbox: run untrusted (PR-supplied) code with nothing of the host but a copy of its checkout.

One setting, ``OPENLAB_PLAN_SANDBOX``, picks the tool:

- ``bwrap`` (default): bubblewrap, the sandbox Flatpak uses. Inside: a throwaway copy of the checkout at
  ``/checkout`` (symlinks that leave it are dropped), ``/usr`` and the Python interpreter, its venv and
  site-packages read-only, a private ``/tmp``, a fresh ``/proc`` of its own pid namespace, a minimal ``/dev``;
  no network, ipc, uts or pid sharing, an empty environment, no home, no bot working dir, and a seccomp filter
  (pyseccomp) that refuses to create sockets. As root, bwrap keeps the host user namespace and the command
  drops to uid 65534 (``setpriv``): in a user namespace the sandbox would still be host uid 0, which the kernel
  exempts from RLIMIT_NPROC, so a fork storm would not stop.
- ``nsjail``: the same layout as an nsjail command line (documented, not exercised by the tests).
- ``unsandboxed``: an explicit opt-out: rlimits, an empty environment and (where ``unshare`` works) no network,
  but the code sees the host filesystem. Every plan says so (``runner.sandbox_plan.PlanOutcome.isolation``).

A missing tool fails closed: :func:`run_sandboxed` raises :class:`SandboxError` naming the fix and runs nothing
(:mod:`runner.sandbox_plan` turns that into the plan's error).

Limits: RLIMIT_AS, RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NPROC and no core dumps, set before the tool starts; a wall
timeout; at most ``output_bytes`` read from each pipe. The process group is killed on timeout, on too much
output and after exit, and pipes are read with a deadline, so a child that keeps stdout open cannot stall us.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import resource
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from runner.errors import OpenlabError

MODES = ("bwrap", "nsjail", "unsandboxed")
SANDBOX_ROOT = "/checkout"
NOBODY = 65534
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", "out"}


class SandboxError(OpenlabError):
    """The sandbox cannot run: unknown mode, tool missing or unusable, checkout too big."""


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 120.0
    memory_mb: int = 4096
    nproc: int = 256  # threads count too: JAX and BLAS start one per core
    fsize_mb: int = 64
    output_bytes: int = 1 << 20
    copy_bytes: int = 256 << 20


@dataclass(frozen=True)
class Result:
    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    truncated: bool = False


def sandbox_mode(value: str | None = None) -> str:
    mode = (value if value is not None else os.environ.get("OPENLAB_PLAN_SANDBOX", "bwrap")).strip().lower()
    if mode not in MODES:
        raise SandboxError(f"OPENLAB_PLAN_SANDBOX={mode!r}: expected one of {', '.join(MODES)}")
    return mode


def unavailable(mode: str) -> str | None:
    """Why ``mode`` cannot run here (with the fix), or None when it can."""
    if mode == "unsandboxed":
        return None
    tool = shutil.which(mode)
    if tool is None:
        fix = "apt-get install bubblewrap" if mode == "bwrap" else "install nsjail"
        return (f"the plan sandbox ({mode}) is not installed, so PR code is not planned. Fix: `{fix}` on the bot's "
                "host (or set OPENLAB_PLAN_SANDBOX=unsandboxed to accept weaker isolation)")
    if mode == "bwrap" and not _bwrap_works(tool):
        return ("bubblewrap is installed but cannot create namespaces here (user namespaces disabled?), so PR code "
                "is not planned. Fix: allow unprivileged user namespaces or run the bot where bwrap works")
    return None


@functools.cache
def _bwrap_works(tool: str) -> bool:
    try:
        args = [tool, *_bwrap_base(), "--ro-bind", "/", "/", "true"]
        return subprocess.run(args, capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@functools.cache
def network_prefix() -> tuple[str, ...]:
    """``unshare`` options that cut the network off for the unsandboxed mode, or () where none work."""
    for prefix in (("unshare", "-rn"), ("unshare", "-n")):
        try:
            if subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0:
                return prefix
        except (OSError, subprocess.TimeoutExpired):
            continue
    return ()


def copy_checkout(src: Path, dst: Path, max_bytes: int) -> Path:
    """Copy ``src`` to ``dst`` without following symlinks; drop links that leave it and non-regular files."""
    total = 0

    def ignore(folder: str, names: list[str]) -> set[str]:
        nonlocal total
        out = set()
        for name in names:
            p = Path(folder, name)
            if p.is_symlink():
                if _escapes(src, p):
                    out.add(name)
            elif p.is_dir():
                if name in _SKIP_DIRS:
                    out.add(name)
            elif p.is_file():
                total += p.stat().st_size
                if total > max_bytes:
                    raise SandboxError(f"the checkout holds more than {max_bytes >> 20} MiB to copy into the sandbox")
            else:
                out.add(name)  # fifos, sockets, devices: reading one could block
        return out

    shutil.copytree(src, dst, symlinks=True, ignore=ignore)
    os.chmod(dst, 0o755)  # bwrap enters it before dropping to nobody, with no capability to pass a 0700 dir
    if os.geteuid() == 0:  # the sandboxed code runs as nobody and may write in its own copy
        for folder, dirs, files in os.walk(dst):
            for name in [*dirs, *files]:
                os.lchown(Path(folder, name), NOBODY, NOBODY)
        os.chown(dst, NOBODY, NOBODY)
    return dst


def _escapes(root: Path, link: Path) -> bool:
    target = os.readlink(link)
    if os.path.isabs(target):
        return True
    rel = os.path.normpath(os.path.join(os.path.relpath(link.parent, root), target))
    return rel == ".." or rel.startswith("../")


def _python_paths() -> list[str]:
    """What the interpreter needs, read-only: prefixes and import path, minus any project root on it."""
    import runner

    pkg = str(Path(runner.__file__).resolve().parent)
    paths = {sys.base_prefix, sys.prefix, sys.exec_prefix, pkg}
    for entry in sys.path:
        if entry and os.path.isdir(entry) and not os.path.isdir(os.path.join(entry, "runner")):
            paths.add(os.path.realpath(entry))
    for p in list(paths):  # a venv's python is a symlink to the base interpreter
        paths.add(os.path.dirname(os.path.dirname(os.path.realpath(os.path.join(p, "bin", "python")))))
    kept = sorted(p for p in paths if os.path.isdir(p) and p != "/")
    return [p for p in kept if not any(p != q and p.startswith(q + "/") for q in kept)]


def _bwrap_base() -> list[str]:
    common = ["--die-with-parent", "--new-session", "--clearenv"]
    if os.geteuid() == 0:
        return [*common, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return [*common, "--unshare-all"]


def _bwrap_args(tool: str, copy: Path, env: dict[str, str], argv: list[str], seccomp_fd: int | None) -> list[str]:
    args = [tool, *_bwrap_base(), *(["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else [])]
    # The private /tmp first: an interpreter or venv that lives under the host's /tmp (a CI clone there) is bound
    # on top of it below; mounted after, the tmpfs would hide it.
    args += ["--perms", "1777", "--tmpfs", "/tmp"]
    binds = ["/usr", *_python_paths()]
    dirs: list[str] = []
    for b in binds:
        for parent in reversed(Path(b).parents):
            if str(parent) != "/" and str(parent) not in dirs:
                dirs.append(str(parent))
    for d in dirs:
        args += ["--perms", "0755", "--dir", d]
    for name in ("lib", "lib64", "bin", "sbin"):
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            args += ["--ro-bind", str(host), str(host)]
    for b in binds:
        args += ["--ro-bind", b, b]
    args += ["--bind", str(copy), SANDBOX_ROOT, "--chdir", SANDBOX_ROOT, "--proc", "/proc", "--dev", "/dev"]
    for k, v in env.items():
        args += ["--setenv", k, v]
    if os.geteuid() == 0:
        drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--"]
        return [*args, *drop, *argv]
    return [*args, *argv]


def nsjail_args(tool: str, copy: Path, env: dict[str, str], argv: list[str], limits: Limits) -> list[str]:
    """The same layout for nsjail (mode ``nsjail``): ro binds, the copy at /checkout, a tmpfs /tmp, nobody."""
    args = [tool, "--mode", "o", "--quiet", "--user", str(NOBODY), "--group", str(NOBODY), "--cwd", SANDBOX_ROOT,
            "--time_limit", str(int(limits.timeout_s) + 1), "--rlimit_as", str(limits.memory_mb),
            "--rlimit_nproc", str(limits.nproc), "--rlimit_fsize", str(limits.fsize_mb), "--disable_clone_newcgroup",
            "--bindmount", f"{copy}:{SANDBOX_ROOT}", "--tmpfsmount", "/tmp"]
    for b in ["/usr", "/lib", "/lib64", "/bin", *_python_paths()]:
        if os.path.exists(b):
            args += ["--bindmount_ro", b]
    for k, v in env.items():
        args += ["--env", f"{k}={v}"]
    return [*args, "--", *argv]


def _nproc(limits: Limits) -> int:
    """RLIMIT_NPROC counts every task of the real uid: as root the sandbox runs as nobody; as a plain user the
    bot's own processes and threads (Ray's too, on one machine) count, so the sandbox gets that many more."""
    if os.geteuid() == 0:
        return limits.nproc
    mine = 0
    for d in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if d.name.isdigit() and d.stat().st_uid == os.geteuid():
                mine += len(os.listdir(d / "task"))
    return limits.nproc + mine


def _limits(limits: Limits, nproc: int) -> None:
    cpu = int(limits.timeout_s) + 1
    for which, value in ((resource.RLIMIT_CPU, cpu), (resource.RLIMIT_AS, limits.memory_mb << 20),
                         (resource.RLIMIT_FSIZE, limits.fsize_mb << 20), (resource.RLIMIT_CORE, 0),
                         (resource.RLIMIT_NPROC, nproc)):
        resource.setrlimit(which, (value, value))


def sandbox_env(home: str) -> dict[str, str]:
    """The whole environment of sandboxed code: nothing inherited, offline switches on."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home, "TMPDIR": home,
            "JAX_PLATFORMS": "cpu", "WANDB_MODE": "disabled", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
            "PYTHONDONTWRITEBYTECODE": "1", "NO_PROXY": "*"}


def seccomp_program(path: Path) -> Path | None:
    """Write a BPF filter that makes socket() fail (EPERM) for the families that reach anything outside: a second
    wall behind the network namespace. None where pyseccomp or libseccomp is missing (the namespaces still hold)."""
    try:
        import pyseccomp as sc
    except Exception:  # noqa: BLE001 - ImportError, or OSError/AttributeError when libseccomp.so is absent
        return None
    filt = sc.SyscallFilter(sc.ALLOW)
    for family in (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK, socket.AF_PACKET):
        filt.add_rule(sc.ERRNO(errno.EPERM), "socket", sc.Arg(0, sc.EQ, family))
    with open(path, "wb") as out:
        filt.export_bpf(out)
    return path


def run_sandboxed(checkout: Path, argv: list[str], limits: Limits, mode: str) -> Result:
    """Run ``argv`` in a throwaway copy of ``checkout`` under ``mode``; SandboxError when it cannot run."""
    why = unavailable(mode)
    if why:
        raise SandboxError(why)
    with tempfile.TemporaryDirectory(prefix="openlab-sandbox-") as tmp, contextlib.ExitStack() as stack:
        copy = copy_checkout(checkout, Path(tmp) / "checkout", limits.copy_bytes)
        fds: tuple[int, ...] = ()
        if mode == "unsandboxed":
            cmd, cwd, env = [*network_prefix(), *argv], str(copy), sandbox_env(tmp)
        else:
            tool, inner = shutil.which(mode) or mode, sandbox_env("/tmp")
            if mode == "bwrap":
                bpf = seccomp_program(Path(tmp) / "seccomp.bpf")
                fds = (stack.enter_context(open(bpf, "rb")).fileno(),) if bpf else ()
                cmd = _bwrap_args(tool, copy, inner, argv, fds[0] if fds else None)
            else:
                cmd = nsjail_args(tool, copy, inner, argv, limits)
            cwd, env = tmp, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        try:
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True, pass_fds=fds,
                                    preexec_fn=functools.partial(_limits, limits, _nproc(limits)))
        except OSError as err:
            raise SandboxError(f"could not start the sandbox: {err.strerror or err}") from None
        return _collect(proc, limits)


def _collect(proc: subprocess.Popen[bytes], limits: Limits, grace_s: float = 0.5) -> Result:
    """Read both pipes up to the bound until exit (plus a grace) or the deadline; then kill the whole group."""
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    bufs = {out_fd: bytearray(), err_fd: bytearray()}
    deadline = time.monotonic() + limits.timeout_s
    exited_at: float | None = None
    timed_out = truncated = False
    with selectors.DefaultSelector() as sel:
        for f in (proc.stdout, proc.stderr):
            sel.register(f, selectors.EVENT_READ)
        while sel.get_map() and not truncated:
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > grace_s:
                break  # something that outlived the process still holds the pipe: stop listening
            for key, _ in sel.select(timeout=min(0.1, deadline - now)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                buf = bufs[key.fd]
                buf += chunk[: limits.output_bytes - len(buf)]
                truncated = truncated or len(buf) >= limits.output_bytes
    _kill_group(proc)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    proc.stdout.close()
    proc.stderr.close()
    rc = None if timed_out else proc.returncode
    return Result(rc, bytes(bufs[out_fd]), bytes(bufs[err_fd]), timed_out=timed_out, truncated=truncated)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


