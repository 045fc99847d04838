"""`openlab init`: write what a lab needs into its own git repository, and keep it up to date.

Files come from ``templates/init/`` (``github/`` becomes ``.github/``; ``*.j2`` are rendered with the installed
version, so the workflows pin openlab's reusable workflows to it) plus ``.github/openlab.yml`` generated from the
repo-config model. ``.github/openlab-init.json`` records the sha256 of every file as written: on a re-run (say
after an upgrade) a file whose content still has that hash is the lab's untouched copy and is updated; any other
existing file was edited by the lab and is kept, its difference shown, unless ``--force``; a file init wrote
before and the lab since deleted stays deleted.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import jinja2

import templates
from bot.adopt.repo_yaml import default_repo_yaml
from bot.config.repo_config import CONFIG_PATH
from runner import attest
from runner.errors import OpenlabError

MANIFEST = ".github/openlab-init.json"
PUBLIC_KEY = ".github/openlab.pub"
DEFAULT_UPSTREAM = "openlab/openlab"


def installed_version() -> str:
    try:
        return version("openlab")
    except PackageNotFoundError:  # a bare checkout on sys.path
        return "0.0.0"


@dataclass
class InitReport:
    written: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)  # path -> unified diff (ours vs theirs)
    overwritten: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)  # written before, removed by the lab since: not re-created
    private_key: Path | None = None


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def render_files(upstream: str = DEFAULT_UPSTREAM, ver: str | None = None) -> dict[str, str]:
    """Every file init writes, repository path -> content."""
    ver = ver or installed_version()
    ref = f"v{ver}"
    ctx = {
        "version": ver, "upstream": upstream, "ref": ref, "upstream_url": f"https://github.com/{upstream}",
        "requirement": f"openlab @ git+https://github.com/{upstream}@{ref}",
    }
    root = templates.path("init")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(root)), keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined, autoescape=False)
    out: dict[str, str] = {}
    for src in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        rel = src.relative_to(root).as_posix()
        dest = "." + rel if rel.startswith("github/") else rel
        if rel.endswith(".j2"):
            out[dest.removesuffix(".j2")] = env.get_template(rel).render(**ctx)
        else:
            out[dest] = src.read_text()
    out[CONFIG_PATH] = default_repo_yaml()
    return out


def git_root(start: Path) -> Path:
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    raise OpenlabError(f"{start} is not inside a git repository: run `git init` first (openlab init writes into one)")


def _read_manifest(root: Path) -> dict[str, str]:
    path = root / MANIFEST
    if not path.exists():
        return {}
    try:
        files = json.loads(path.read_text())["files"]
        return {str(k): str(v) for k, v in files.items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise OpenlabError(f"{MANIFEST}: not a manifest openlab wrote (delete it to start over)") from None


def _diff(path: str, ours: str, theirs: str) -> str:
    return "".join(difflib.unified_diff(theirs.splitlines(True), ours.splitlines(True),
                                        f"{path} (yours)", f"{path} (openlab init)"))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".openlab-tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def init_lab(root: Path, *, force: bool = False, upstream: str = DEFAULT_UPSTREAM,
             private_key: Path | None = None, ver: str | None = None) -> InitReport:
    """Write (or update) the lab files under git repository `root`."""
    report = InitReport()
    recorded = _read_manifest(root)
    manifest: dict[str, str] = {}
    for rel, text in render_files(upstream, ver).items():
        dest = root / rel
        new_sha = _sha(text.encode())
        if not dest.exists() and rel in recorded and not force:
            report.deleted.append(rel)  # the lab removed it (say, the example once copied): stays removed
            manifest[rel] = recorded[rel]
            continue
        if not dest.exists():
            _write(dest, text)
            report.written.append(rel)
            manifest[rel] = new_sha
            continue
        current = dest.read_text(errors="replace")
        cur_sha = _sha(current.encode())
        if cur_sha == new_sha:
            report.unchanged.append(rel)
            manifest[rel] = new_sha
        elif recorded.get(rel) == cur_sha or force:
            _write(dest, text)
            (report.overwritten if recorded.get(rel) != cur_sha else report.updated).append(rel)
            manifest[rel] = new_sha
        else:
            report.kept[rel] = _diff(rel, text, current)
            if rel in recorded:
                manifest[rel] = recorded[rel]
    _write(root / MANIFEST, json.dumps({"openlab": ver or installed_version(), "files": manifest}, indent=2) + "\n")
    if not (root / PUBLIC_KEY).exists():
        report.private_key = _keypair(root, private_key)
    return report


def default_private_key_path(root: Path) -> Path:
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "openlab" / f"{root.name}-signing-key.pem"


def _keypair(root: Path, private_key: Path | None) -> Path:
    """The lab's attestation key pair: public key committed, private key outside the repository."""
    priv_path = (private_key or default_private_key_path(root)).expanduser().resolve()
    if priv_path.is_relative_to(root.resolve()):
        raise OpenlabError(f"--private-key {priv_path} is inside the repository: it must never be committed")
    if priv_path.exists():
        raise OpenlabError(f"{priv_path} exists and {PUBLIC_KEY} is missing: refusing to overwrite a private key; "
                           "pass --private-key with a new path")
    priv, pub = attest.generate_keypair()
    priv_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(priv_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(priv)
    _write(root / PUBLIC_KEY, pub.decode())
    return priv_path
