"""`openlab leaderboard import`: bring a lab's history in, starting with Marin's speedrun results.

Reads every version of Marin's results format (../shared/reference/marin.md §2.5) and writes one
:class:`runner.schema.ImportedResults` per run as ``OUT/<run folder>/results.json``, which
``openlab leaderboard build --results OUT`` shows on the frontier marked *imported* (never verified).

Formats, as Marin's producers wrote them (``marin/speedrun/speedrun.py`` across its versions):

- ``marin-run_related_info``: ``{"runs": [{"run_related_info": {...}, "run_stats": {...}}]}``, the first
  format. ``run_stats.training_time_in_minutes`` holds the sum of step durations in *seconds* (the
  producer sums ``throughput/duration`` and never divides), so it is kept as seconds. There are no model
  FLOPs, only ``pre_run_flops_estimate`` (6·N·D), kept as ``flops_6nd``.
- ``marin-speedrun_config``: ``{"runs": [{"speedrun_config": {...}}]}``, a short-lived middle format whose
  ``training_time_in_minutes`` really is minutes (the producer divides by 60) and whose author is a string.
- ``marin-run_info``: ``{"runs": [{"run_info": {...}}]}``, the current format (v1 and v2 fields).
- ``marin-leaderboard``: Marin's site data, ``data/runs.json``, a list of leaderboard entries.

Files found in a folder: ``speedrun_results*.json`` (so the real variants ``speedrun_results_v5p64.json``
and ``speedrun_results-sep.json`` come in too, each as its own run ``<folder>-<variant>``) and
``runs.json``. Every file gets a report of the fields it kept and those it could not read; a run that
cannot be used (no BPB, wrong types) is named with its file and field and the rest are still imported.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from runner.config import format_validation_error
from runner.schema import ImportedResults, ImportSource, ResultsError, dumps_imported

RESULTS_NAME = "results.json"
REPORT_NAME = "import_report.json"
_RESULTS_FILE = re.compile(r"^speedrun_results(?P<variant>[-_.][A-Za-z0-9_.-]+)?\.json$")
_SPEEDRUN_ROOT = "experiments/speedrun/"
_BPB = "eval/paloma/c4_en/bpb"


class FileReport(BaseModel):
    """What one source file gave: its format, the runs imported, the fields kept and those not read."""

    model_config = ConfigDict(extra="forbid")

    path: str
    format: str | None = None
    runs: list[str] = []
    kept: list[str] = []
    not_read: list[str] = []
    errors: list[str] = []


class ImportReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str
    out: str
    files: list[FileReport]
    imported: int
    failed: int


def _num(v: Any) -> float | None:
    """A number Marin wrote as a number or, in its first format, as a formatted string ("1.23e+18")."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return None


def _int(v: Any) -> int | None:
    f = _num(v)
    return int(f) if f is not None and f.is_integer() else None


def _date(v: Any) -> datetime | None:
    if not isinstance(v, str):
        return None
    for fmt in ("%Y-%m-%d %H:%M:%S UTC", "%Y-%m-%dT%H:%M:%S%z"):
        try:
            d = datetime.strptime(v, fmt)
        except ValueError:
            continue
        return d if d.tzinfo else d.replace(tzinfo=UTC)
    try:
        d = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return None
    return d if d.tzinfo else d.replace(tzinfo=UTC)


def _author(v: Any, affiliation: Any = None) -> dict[str, Any] | None:
    if isinstance(v, Mapping) and isinstance(v.get("name"), str) and v["name"]:
        return {k: v.get(k) for k in ("name", "affiliation", "url") if isinstance(v.get(k), str)}
    if isinstance(v, str) and v:
        out: dict[str, Any] = {"name": v}
        if isinstance(affiliation, str) and affiliation:
            out["affiliation"] = affiliation
        return out
    return None


def _dict(v: Any) -> dict[str, Any] | None:
    return dict(v) if isinstance(v, Mapping) else None


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _minutes(v: Any) -> float | None:
    f = _num(v)
    return None if f is None else f * 60


# Marin field -> (our field, converter). A converter returning None means "present but unreadable".
Conv = Callable[[Any], Any]
_RUN_INFO: dict[str, tuple[str, Conv]] = {
    _BPB: ("bpb", _num),
    "author": ("author", _author),
    "description": ("description", _str),
    "model_flops": ("model_flops", _num),
    "model_flops_per_token": ("model_flops_per_token", _num),
    "training_hardware_flops": ("hardware_flops", _num),
    "model_size": ("params", _int),
    "total_tokens": ("tokens", _int),
    "training_time": ("training_seconds", _num),
    "num_devices": ("num_devices", _int),
    "num_chips": ("num_chips", _int),
    "device_flops": ("device_flops", _num),
    "run_completion_timestamp": ("finished_at", _date),
    "tokenized_dataset": ("tokenized_dataset", _str),
    "model_config": ("model_config", _dict),
    "train_config": ("train_config", _dict),
    "resources": ("resources", _dict),
    "wandb_run_link": ("wandb_url", _str),
}
_RELATED_INFO: dict[str, tuple[str, Conv]] = {
    "num_parameters": ("params", _int),
    "total_tokens": ("tokens", _int),
    "model_config": ("model_config", _dict),
    "train_config": ("train_config", _dict),
    "tokenized_dataset": ("tokenized_dataset", _str),
    "resources": ("resources", _dict),
    "hardware_config": ("resources", _dict),
    "run_completion_timestamp": ("finished_at", _date),
    "wandb_run_link": ("wandb_url", _str),
    "wandb_link": ("wandb_url", _str),
    "submitted_by": ("author", _author),
}
_RUN_STATS: dict[str, tuple[str, Conv]] = {
    _BPB: ("bpb", _num),
    "pre_run_flops_estimate": ("flops_6nd", _num),
    "training_time_in_minutes": ("training_seconds", _num),  # seconds, despite the name (module docstring)
    "total_training_flops": ("hardware_flops", _num),
    "final_flops_estimate": ("hardware_flops", _num),
}
_SPEEDRUN_CONFIG: dict[str, tuple[str, Conv]] = {
    **{k: v for k, v in _RUN_INFO.items() if k not in ("author", "training_time")},
    "training_time_in_minutes": ("training_seconds", _minutes),
}
_LEADERBOARD: dict[str, tuple[str, Conv]] = {
    "eval_paloma_c4_en_bpb": ("bpb", _num),
    "author": ("author", _author),
    "description": ("description", _str),
    "model_flops": ("model_flops", _num),
    "training_hardware_flops": ("hardware_flops", _num),
    "model_size": ("params", _int),
    "training_time": ("training_seconds", _num),
    "run_completion_timestamp": ("finished_at", _date),
    "wandb_link": ("wandb_url", _str),
}


def _take(
    obj: Mapping[str, Any], table: dict[str, tuple[str, Conv]], where: str, out: dict[str, Any], rep: FileReport
) -> None:
    for key, value in obj.items():
        if key not in table:
            _note(rep.not_read, f"{where}.{key}: not a field openlab keeps")
            continue
        field, conv = table[key]
        if value is None:
            continue
        got = conv(value)
        if got is None:
            _note(rep.not_read, f"{where}.{key}: unreadable value {json.dumps(value)[:60]}")
            continue
        if field not in out:
            out[field] = got
        _note(rep.kept, f"{where}.{key}")


def _note(items: list[str], text: str) -> None:
    # One line per field for all runs of a file ("runs[3].x" -> "runs[*].x") keeps a report short.
    text = re.sub(r"\[\d+\]", "[*]", text, count=1)
    if text not in items:
        items.append(text)


def _records(data: Any) -> tuple[str | None, list[tuple[str, Mapping[str, Any]]]]:
    """(format, [(where, record)]) of a parsed file, or (None, []) when it is no Marin format."""
    if isinstance(data, list):
        if all(isinstance(e, Mapping) and "run_name" in e for e in data):
            return "marin-leaderboard", [(f"[{i}]", e) for i, e in enumerate(data)]
        return None, []
    if not isinstance(data, Mapping):
        return None, []
    runs = data["runs"] if isinstance(data.get("runs"), list) else [data]
    recs: list[tuple[str, Mapping[str, Any]]] = []
    fmt = None
    for i, r in enumerate(runs):
        if not isinstance(r, Mapping):
            continue
        for key, name in (
            ("run_info", "marin-run_info"),
            ("speedrun_config", "marin-speedrun_config"),
            ("run_related_info", "marin-run_related_info"),
        ):
            if isinstance(r.get(key), Mapping):
                fmt = fmt or name
                recs.append((f"runs[{i}]", r))
                break
    return fmt, recs


def _fields(fmt: str, where: str, rec: Mapping[str, Any], rep: FileReport) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if fmt == "marin-run_info":
        _take(rec["run_info"], _RUN_INFO, f"{where}.run_info", out, rep)
    elif fmt == "marin-speedrun_config":
        cfg = rec["speedrun_config"]
        _take({k: v for k, v in cfg.items() if k not in ("author", "affiliation")}, _SPEEDRUN_CONFIG,
              f"{where}.speedrun_config", out, rep)
        if (a := _author(cfg.get("author"), cfg.get("affiliation"))) is not None:
            out["author"] = a
            _note(rep.kept, f"{where}.speedrun_config.author")
    elif fmt == "marin-run_related_info":
        _take(rec["run_related_info"], _RELATED_INFO, f"{where}.run_related_info", out, rep)
        stats = rec.get("run_stats") if isinstance(rec.get("run_stats"), Mapping) else rec.get("actual_stats")
        if isinstance(stats, Mapping):
            _take(stats, _RUN_STATS, f"{where}.run_stats", out, rep)
        for key in rec:
            if key not in ("run_related_info", "run_stats", "actual_stats"):
                _note(rep.not_read, f"{where}.{key}: not a field openlab keeps")
    else:
        _take({k: v for k, v in rec.items() if k not in ("run_name", "results_filepath")}, _LEADERBOARD,
              where, out, rep)
    return out


def _variant(name: str) -> str | None:
    m = _RESULTS_FILE.match(name)
    v = m.group("variant") if m else None
    return v.lstrip("-_.") or None if v else None


def _run_name(folder: str) -> str:
    """Marin's run_name: the folder below ``experiments/speedrun/`` (wherever the import root was)."""
    head, sep, tail = folder.partition(_SPEEDRUN_ROOT)
    if not sep and folder.startswith(_SPEEDRUN_ROOT.rstrip("/")):
        tail = folder[len(_SPEEDRUN_ROOT) :]
    return (tail if sep else folder).strip("/") or "run"


def read_file(
    path: Path, rel: str, repo: str | None, commit: str | None, now: datetime
) -> tuple[list[tuple[str, ImportedResults]], FileReport]:
    """[(output folder, run)] of one Marin file, and its report. Never raises for bad input."""
    rep = FileReport(path=rel)
    try:
        data = json.loads(path.read_bytes())
    except OSError as err:
        rep.errors.append(f"{rel}: cannot read: {err.strerror or err}")
        return [], rep
    except ValueError as err:
        rep.errors.append(f"{rel}: not valid JSON: {err}")
        return [], rep
    fmt, recs = _records(data)
    rep.format = fmt
    if fmt is None:
        rep.errors.append(
            f"{rel}: not a Marin results file (expected runs[].run_info, runs[].run_related_info, "
            "runs[].speedrun_config, or a list of leaderboard entries with run_name)"
        )
        return [], rep
    out: list[tuple[str, ImportedResults]] = []
    folder = str(Path(rel).parent).replace("\\", "/")
    folder = "" if folder == "." else folder
    variant = _variant(Path(rel).name)
    for i, (where, rec) in enumerate(recs):
        fields = _fields(fmt, where, rec, rep)
        if fmt == "marin-leaderboard":
            name = _str(rec.get("run_name")) or _run_name(_str(rec.get("results_filepath")) or "")
        else:
            name = _run_name(folder + (f"-{variant}" if variant else "") + (f"-{i}" if i else ""))
        # Every run lands where Marin keeps it, so the scaling tracks group imported runs as Marin's site does.
        run_folder = _SPEEDRUN_ROOT + name
        if "bpb" not in fields:
            field = "eval_paloma_c4_en_bpb" if fmt == "marin-leaderboard" else _BPB
            rep.errors.append(f"{rel}: {where}: field {field!r} is missing or not a number; run not imported")
            continue
        source = ImportSource(format=fmt, path=rel, index=i, repo=repo, commit=commit, imported_at=now)  # type: ignore[arg-type]
        try:
            run = ImportedResults.model_validate({"run_id": f"imported/{name}", "name": name, **fields,
                                                  "source": source})
        except ValidationError as err:
            rep.errors.append(f"{format_validation_error(err, f'{rel}: {where}')}; run not imported")
            continue
        rep.runs.append(run.run_id)
        out.append((run_folder, run))
    return out, rep


def discover(src: Path) -> list[tuple[Path, str]]:
    """Marin result files under ``src`` as (path, path relative to ``src``), sorted as Marin's glob is."""
    if src.is_file():
        return [(src, src.name)]
    hits = [p for p in src.rglob("*.json") if _RESULTS_FILE.match(p.name) or p.name == "runs.json"]
    hits = [p for p in hits if not any(part.startswith(".") for part in p.relative_to(src).parts)]
    return sorted((p, p.relative_to(src).as_posix()) for p in hits)


def import_results(
    src: str | Path, out: str | Path, repo: str | None = None, commit: str | None = None
) -> ImportReport:
    """Import every Marin result file under ``src`` into ``out``; the report says what each file gave."""
    src_p, out_p = Path(src), Path(out)
    if not src_p.exists():
        raise ResultsError(f"{src}: no such file or folder")
    now = datetime.now(UTC).replace(microsecond=0)
    reports: list[FileReport] = []
    written: dict[str, str] = {}
    for path, rel in discover(src_p):
        runs, rep = read_file(path, rel, repo, commit, now)
        for folder, run in runs:
            if run.run_id in written:
                rep.errors.append(f"{rel}: run {run.run_id!r} already imported from {written[run.run_id]}; skipped")
                rep.runs.remove(run.run_id)
                continue
            target = out_p / folder / RESULTS_NAME
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(".json.tmp")
            tmp.write_text(dumps_imported(run), encoding="utf-8")
            tmp.replace(target)  # never a half-written results.json
            written[run.run_id] = rel
        reports.append(rep)
    report = ImportReport(
        source=str(src_p),
        out=str(out_p),
        files=reports,
        imported=len(written),
        failed=sum(len(r.errors) for r in reports),
    )
    out_p.mkdir(parents=True, exist_ok=True)
    (out_p / REPORT_NAME).write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return report
