"""The compact per-run summary the site's tables, chart, feed and ranking are built from.

A :class:`Row` is derived from a validated :class:`runner.schema.Results` (never from raw JSON), so the
schema stays the one field list; it exists because the build runs in worker processes and only this small,
picklable summary travels back to the parent (workers write the schema's own JSON for ``runs.json``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from leaderboard.load import LoadedRun, safe_url
from runner.schema import ImportedResults

_UNSAFE_SLUG = re.compile(r"[^A-Za-z0-9._-]")
_GIT_SSH = re.compile(r"^git@([^:]+):(.+?)(\.git)?$")


@dataclass(frozen=True, slots=True)
class Row:
    index: int
    run_id: str
    name: str
    slug: str
    author: tuple[str, str | None, str | None] | None
    date: str
    finished_at: str
    params: int | None
    tokens: int | None
    seconds: float | None
    model_flops: float | None
    hardware_flops: float | None
    mfu: float | None
    bpb: float
    wandb: str | None
    code: str | None
    verification: str
    folder: str
    description: str


def slugify(run_id: str) -> str:
    """A file name for a run page: the id when it is safe, else a cleaned id plus a short hash (no clashes)."""
    clean = _UNSAFE_SLUG.sub("_", run_id)[:80].strip(".") or "run"
    if clean == run_id:
        return clean
    return f"{clean}-{hashlib.sha256(run_id.encode()).hexdigest()[:10]}"


def repo_web_url(remote: str | None) -> str | None:
    """https URL of a git remote (``git@host:o/r.git`` and ``https://host/o/r.git`` forms)."""
    if not remote:
        return None
    m = _GIT_SSH.match(remote.strip())
    url = f"https://{m.group(1)}/{m.group(2)}" if m else safe_url(remote)
    return url.removesuffix(".git").rstrip("/") if url else None


def code_url(run: LoadedRun, repo_url: str | None, folder_in_repo: bool) -> str | None:
    """The run's folder in the repository at the run's commit (the repository root when not in the repo)."""
    r = run.results
    if isinstance(r, ImportedResults):
        return _imported_code_url(r)
    base = repo_web_url(repo_url) if repo_url else repo_web_url(r.provenance.git_remote)
    sha = r.provenance.git_sha
    if not base or not sha or not re.fullmatch(r"[0-9a-fA-F]{7,64}", sha):
        return None
    if folder_in_repo and run.folder and not run.folder.startswith(("/", "..")):
        return f"{base}/tree/{sha}/{run.folder}"
    return f"{base}/tree/{sha}"


def _imported_code_url(r: ImportedResults) -> str | None:
    """The source file on GitHub when the import named its repository and commit."""
    s = r.source
    if not s.repo or not s.commit or not re.fullmatch(r"[\w.-]+/[\w.-]+", s.repo):
        return None
    if not re.fullmatch(r"[0-9a-fA-F]{7,64}", s.commit):
        return None
    return f"https://github.com/{s.repo}/blob/{s.commit}/{s.path}"


def _imported_row(index: int, run: LoadedRun, r: ImportedResults) -> Row:
    author = (r.author.name, r.author.affiliation, safe_url(r.author.url)) if r.author else None
    # Feeds need a time: a run Marin recorded no completion time for sorts by when it was imported.
    finished = (r.finished_at or r.source.imported_at).isoformat()
    return Row(
        index=index,
        run_id=r.run_id,
        name=r.name,
        slug=slugify(r.run_id),
        author=author,
        date=r.finished_at.date().isoformat() if r.finished_at else "",
        finished_at=finished,
        params=r.params,
        tokens=r.tokens,
        seconds=r.training_seconds,
        model_flops=r.model_flops,
        hardware_flops=r.hardware_flops,
        mfu=r.mfu,
        bpb=r.bpb,
        wandb=safe_url(r.wandb_url),
        code=_imported_code_url(r),
        verification=run.verification,
        folder=run.folder,
        description=r.description,
    )


def make_row(index: int, run: LoadedRun, repo_url: str | None, folder_in_repo: bool) -> Row:
    r = run.results
    if isinstance(r, ImportedResults):
        return _imported_row(index, run, r)
    author = (r.author.name, r.author.affiliation, safe_url(r.author.url)) if r.author else None
    finished = r.provenance.finished_at
    return Row(
        index=index,
        run_id=r.run_id,
        name=r.name,
        slug=slugify(r.run_id),
        author=author,
        date=finished.date().isoformat(),
        finished_at=finished.isoformat(),
        params=r.params,
        tokens=r.tokens,
        seconds=r.training_seconds,
        model_flops=r.model_flops,
        hardware_flops=r.hardware_flops,
        mfu=r.mfu,
        bpb=r.bpb,
        wandb=safe_url(r.tracking.wandb_url),
        code=code_url(run, repo_url, folder_in_repo),
        verification=run.verification,
        folder=run.folder,
        description=r.description,
    )
