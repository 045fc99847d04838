"""Find and read results files, only through :mod:`runner.schema`, and say what was skipped and why.

A source is a glob in the working tree (``experiments/**/results.json``), a local folder, a single file,
or a store URL (``gs://bucket/runs``, ``memory://...``; searched for ``**/results.json`` through fsspec).
Every file that cannot be used yields one warning naming it: unreadable, not JSON, not the schema (older
``schema_version`` files go through :func:`runner.schema.upgrade`), a duplicate run id, an attestation
that does not verify. User text that looks like markup is kept (the templates escape it) but warned about;
links whose scheme is not http(s) are dropped with a warning so no ``javascript:`` URL reaches a page.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable, Iterable
from typing import Literal
from urllib.parse import urlparse

from fsspec.core import url_to_fs
from pydantic import BaseModel, ConfigDict, Field

from runner import attest
from runner.schema import ImportedResults, Results, ResultsError, loads_any_results

RESULTS_NAME = "results.json"
METRICS_NAME = "metrics.jsonl"
Verification = Literal["verified", "self-reported", "invalid", "imported"]
_MARKUP = re.compile(r"[<>]|&#|javascript:", re.IGNORECASE)


class LoadedRun(BaseModel):
    """One usable results file and what the site needs to know about where it came from."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    results: Results | ImportedResults
    source: str
    folder: str
    verification: Verification
    metrics: str | None = None


class LoadReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    runs: list[LoadedRun]
    warnings: list[str]
    files: int
    duplicates: dict[str, list[str]] = Field(default_factory=dict, description="run id -> every file claiming it")


def safe_url(url: str | None) -> str | None:
    """The URL if its scheme is http or https, else None (links from results are untrusted)."""
    if not url:
        return None
    parsed = urlparse(url.strip())
    if parsed.scheme in ("http", "https") and parsed.netloc:
        return url.strip()
    return None


def _is_glob(src: str) -> bool:
    return any(ch in src for ch in "*?[")


def _discover(src: str) -> tuple[list[tuple[str, str]], set[str]]:
    """[(file url/path, run folder)] sorted by path, plus the set of folders holding a metrics.jsonl."""
    if "://" in src and not src.startswith("file://"):
        fs, root = url_to_fs(src)
        proto = src.split("://", 1)[0]
        pattern = root if _is_glob(root) else f"{root.rstrip('/')}/**/{RESULTS_NAME}"
        base = root.rstrip("/") if not _is_glob(root) else _glob_base(root)
        hits = sorted(p for p in fs.glob(pattern) if p.endswith(RESULTS_NAME) or _is_glob(root))
        mpat = pattern.rsplit("/", 1)[0] + "/" + METRICS_NAME
        metrics = {_rel(os.path.dirname(p), base) for p in fs.glob(mpat)}
        return [(f"{proto}://{p}", _rel(os.path.dirname(p), base)) for p in hits], metrics
    src = src.removeprefix("file://")
    if _is_glob(src):
        walked = _walk_glob(src)
        if walked is not None:
            files = [(p, _folder(os.path.dirname(p))) for p, _ in walked]
            return files, {f for (_, has), (_, f) in zip(walked, files, strict=True) if has}
        hits = sorted(glob.glob(src, recursive=True))
        files = [(p, _folder(os.path.dirname(p))) for p in hits if os.path.isfile(p)]
        metrics = {f for p, f in files if os.path.exists(os.path.join(os.path.dirname(p), METRICS_NAME))}
        return files, metrics
    if os.path.isfile(src):
        folder = _folder(os.path.dirname(src))
        has = os.path.exists(os.path.join(os.path.dirname(src), METRICS_NAME))
        return [(src, folder)], ({folder} if has else set())
    files: list[tuple[str, str]] = []
    metrics: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        if RESULTS_NAME in filenames:
            folder = _rel(dirpath, src)
            files.append((os.path.join(dirpath, RESULTS_NAME), folder))
            if METRICS_NAME in filenames:
                metrics.add(folder)
    files.sort()
    return files, metrics


def _walk_glob(pattern: str) -> list[tuple[str, bool]] | None:
    """``glob.glob(pattern, recursive=True)`` for the usual ``base/**/name`` pattern, in one directory scan.

    Returns sorted [(path, has metrics.jsonl beside it)] for the files among the hits, or None when the
    pattern has another shape (the caller then uses :mod:`glob`). Same answers as glob plus the caller's
    ``isfile``/``exists`` checks: hidden folders are not entered, symlinked folders are, paths are spelled
    as glob spells them. Glob stats every folder for ``name`` and the caller stats every hit twice more;
    here the listing each folder is read for anyway says all of it (30,000 fewer system calls for 10,000
    runs).
    """
    parts = pattern.split("/")
    if len(parts) < 2 or parts[-2] != "**" or _is_glob(parts[-1]) or not parts[-1]:
        return None
    head = parts[:-2]
    if head == [""] or any(_is_glob(p) for p in head) or any(not p for p in head[1:]):
        return None
    name = parts[-1]
    out: list[tuple[str, bool]] = []
    stack = ["/".join(head)]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder or os.curdir))
        except OSError:
            continue
        found = has_metrics = False
        for e in entries:
            if e.name == name:
                found = _is(e.is_file)
            if e.name == METRICS_NAME:
                has_metrics = not e.is_symlink() or os.path.exists(e.path)
            if e.name[0] != "." and _is(e.is_dir):
                stack.append(os.path.join(folder, e.name) if folder else e.name)
        if found:
            out.append((os.path.join(folder, name), has_metrics))
    out.sort()
    return out


def _is(check: Callable[[], bool]) -> bool:
    try:
        return check()
    except OSError:
        return False


def _glob_base(pattern: str) -> str:
    parts = pattern.split("/")
    for i, part in enumerate(parts):
        if _is_glob(part):
            return "/".join(parts[:i])
    return pattern


def _rel(path: str, base: str) -> str:
    rel = os.path.relpath(path, base) if path != base else "."
    return "" if rel == "." else rel.replace(os.sep, "/")


def _folder(path: str) -> str:
    """A glob hit's folder, relative to the working tree when it is inside it (so code links work)."""
    p = os.path.normpath(path)
    if os.path.isabs(p):
        try:
            p = os.path.relpath(p, os.getcwd())
        except ValueError:
            return p
        if p.startswith(".."):
            return os.path.normpath(path)
    return "" if p == "." else p.replace(os.sep, "/")


def _read(url: str) -> bytes:
    if "://" in url and not url.startswith("file://"):
        fs, path = url_to_fs(url)
        return fs.cat_file(path)
    with open(url.removeprefix("file://"), "rb", buffering=0) as f:
        return f.readall()


def parse(raw: bytes, source: str) -> Results | ImportedResults:
    """The schema's :class:`Results` from a file's bytes, with exactly the answers of ``loads_results``
    (or the :class:`ImportedResults` of an imported run, ``"kind": "imported"``).

    Valid files (nearly all of them) go straight through pydantic's JSON parser, which is about twice as
    fast as ``json.loads`` plus validation. Whatever that path would treat differently takes the reference
    path instead: any failure (so errors read the same), text that may hold ``NaN``/``Infinity`` (which
    ``loads_results`` rejects anywhere in the file), and a missing ``schema_version`` (which ``upgrade``
    rejects where the model would default it).
    """
    if b"NaN" not in raw and b"Infinity" not in raw:
        try:
            results = Results.model_validate_json(raw)
        except ValueError:
            pass
        else:
            if "schema_version" in results.model_fields_set:
                return results
    return loads_any_results(raw, source)


def _text_warnings(r: Results | ImportedResults, source: str) -> list[str]:
    out = []
    texts = {"name": r.name, "description": r.description}
    if r.author is not None:
        texts |= {"author.name": r.author.name, "author.affiliation": r.author.affiliation or ""}
    for field, text in texts.items():
        if _MARKUP.search(text):
            out.append(f"{source}: {field} contains markup; it is shown escaped")
    if isinstance(r, ImportedResults):
        for field, url in {"wandb_url": r.wandb_url, "author.url": r.author.url if r.author else None}.items():
            if url and safe_url(url) is None:
                out.append(f"{source}: {field} is not an http(s) URL; the link is dropped")
        return out
    urls = {
        "tracking.wandb_url": r.tracking.wandb_url,
        "author.url": r.author.url if r.author else None,
        "provenance.git_remote": r.provenance.git_remote,
        "provenance.execution_url": r.provenance.execution_url,
    }
    for field, url in urls.items():
        if (
            url
            and safe_url(url) is None
            and not (field == "provenance.git_remote" and url.startswith("git@"))
        ):
            out.append(f"{source}: {field} is not an http(s) URL; the link is dropped")
    return out


def discover(sources: str | Iterable[str]) -> tuple[list[tuple[str, str, bool]], list[str]]:
    """Every results file under ``sources`` as (url, run folder, has metrics.jsonl), plus listing warnings."""
    srcs = [sources] if isinstance(sources, str) else list(sources)
    found: list[tuple[str, str, bool]] = []
    warnings: list[str] = []
    for src in srcs:
        try:
            files, metrics = _discover(src)
        except (OSError, ValueError) as err:
            warnings.append(f"{src}: cannot list results: {err}")
            continue
        if not files:
            warnings.append(f"{src}: no {RESULTS_NAME} files found")
        found.extend((url, folder, folder in metrics) for url, folder in files)
    return found, warnings


def load_one(
    url: str, folder: str, has_metrics: bool, public_pem: bytes | None
) -> tuple[LoadedRun | None, list[str]]:
    """Read and check one results file; (None, [why]) when it cannot be used. Never raises for bad input."""
    try:
        results = parse(_read(url), url)
    except ResultsError as err:
        return None, [f"skipped {err}"]
    except (OSError, ValueError) as err:
        return None, [f"skipped {url}: cannot read: {err}"]
    warnings = _text_warnings(results, url)
    verification: Verification
    if isinstance(results, ImportedResults):
        verification = "imported"
    else:
        verification = _verify(results, public_pem)
        if verification == "verified" and not attest.at_attested_path(results, url):
            verification = "invalid"
            warnings.append(f"{url}: a copy of run {results.run_id!r}, attested at "
                            f"{results.attestation.path if results.attestation else '?'}; shown as self-reported")
        elif verification == "invalid":
            warnings.append(f"{url}: attestation does not verify (the file differs from what the lab signed); "
                            "shown as self-reported")
    run = LoadedRun(
        results=results,
        source=url,
        folder=folder,
        verification=verification,
        metrics=_join(url, METRICS_NAME) if has_metrics else None,
    )
    return run, warnings


def duplicate_warning(url: str, run_id: str, first: str) -> str:
    return f"skipped {url}: duplicate run_id {run_id!r} (shown: {first})"


RANK: dict[str, int] = {"verified": 2, "self-reported": 1, "invalid": 0}


def pick_original(candidates: list[tuple[int, str]]) -> int:
    """Which of several files with one run id to show, given (path order, verification) of each: a verified
    original beats any unsigned or modified copy wherever it sits; between equals the earlier path wins."""
    return min(candidates, key=lambda c: (-RANK.get(c[1], 0), c[0]))[0]


def load_runs(sources: str | Iterable[str], public_pem: bytes | None = None) -> LoadReport:
    """Read every results file under ``sources``; a duplicated run id shows its original (see
    :func:`pick_original`) and every other copy is reported in ``warnings`` and ``duplicates``."""
    found, warnings = discover(sources)
    loaded: list[LoadedRun] = []
    for url, folder, has_metrics in found:
        run, notes = load_one(url, folder, has_metrics, public_pem)
        warnings.extend(notes)
        if run is not None:
            loaded.append(run)
    groups: dict[str, list[int]] = {}
    for i, run in enumerate(loaded):
        groups.setdefault(run.results.run_id, []).append(i)
    keep: set[int] = set()
    duplicates: dict[str, list[str]] = {}
    for run_id, idx in groups.items():
        best = pick_original([(i, loaded[i].verification) for i in idx])
        keep.add(best)
        if len(idx) > 1:
            duplicates[run_id] = [loaded[i].source for i in idx]
            warnings += [duplicate_warning(loaded[i].source, run_id, f"{loaded[best].source}, "
                                           f"{loaded[best].verification}") for i in idx if i != best]
    runs = [r for i, r in enumerate(loaded) if i in keep]
    return LoadReport(runs=runs, warnings=warnings, files=len(found), duplicates=duplicates)


def _join(results_url: str, name: str) -> str:
    return results_url.rsplit("/", 1)[0] + "/" + name if "/" in results_url else name


def _verify(results: Results, public_pem: bytes | None) -> Verification:
    if results.attestation is None or not results.attestation.signature:
        return "self-reported"
    if public_pem is None:
        return "self-reported"
    return "verified" if attest.verify(results, public_pem) else "invalid"
