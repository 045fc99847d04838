"""`/verify` reproductions on the bot side: which runs are reproductions, their budget, aggregate and record decision.

A reproduction is registered (run id -> seeds) when its ``DispatchRun`` is applied; the dispatcher then adds
``OPENLAB_SPEEDRUN_SEEDS`` to the job and checks N x the planned FLOPs; when the job ends the reconciler calls
:func:`publish_reproduction` instead of the single-run path. That reads each seed's results through the
executor's record of the launch (a failed seed is listed with its error, the others kept), attests each seed,
checks integrity (the approved SHA, the speedrun track's data fingerprint and eval set), summarises the seeds
(``runner.stats``), judges the claim against the track's tolerance and, when it reproduces, decides the record:
the candidate must beat the current record at its budget (the best accepted record using at most its FLOPs) with
a one-sided Welch p-value under the track's threshold. The aggregate is signed as a whole and written to
``{prefix}/reproductions/{run_id}/reproduction.json``, which the site's record pages read.

Author and affiliation come from the PR and its preregistration issue, never from a results file.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from markupsafe import Markup
from sqlalchemy import Column, MetaData, String, Table, Text, select
from sqlalchemy.engine import Engine

from runner import store
from runner.reproduction import (
    REPRODUCTION_FILE,
    SEEDS_ENV,
    RecordDecision,
    Reproduction,
    SeedRun,
    read_seeds,
    sign_reproduction,
)
from runner.stats import Summary, summarize, welch_less

if TYPE_CHECKING:
    from bot.config.repo_config import RepoConfig
    from bot.runs.services import RunServices
    from bot.runs.state import RunReport

_meta = MetaData()
reproductions = Table(
    "reproductions", _meta,
    Column("run_id", String(64), primary_key=True),
    Column("seeds", Text, nullable=False),
)
_ready: set[int] = set()


def _engine(engine: Engine) -> Engine:
    if id(engine) not in _ready:
        _meta.create_all(engine)
        _ready.add(id(engine))
    return engine


def register(engine: Engine, run_id: str, seeds: list[int]) -> None:
    """Mark ``run_id`` as an N-seed reproduction (idempotent: a replayed action changes nothing)."""
    with _engine(engine).begin() as conn:
        if conn.execute(select(reproductions.c.run_id).where(reproductions.c.run_id == run_id)).first() is None:
            conn.execute(reproductions.insert().values(run_id=run_id, seeds=json.dumps(seeds)))


def seeds_of(engine: Engine, run_id: str) -> list[int] | None:
    with _engine(engine).connect() as conn:
        row = conn.execute(select(reproductions.c.seeds).where(reproductions.c.run_id == run_id)).first()
    return json.loads(row[0]) if row else None


def job_env(engine: Engine, run_id: str) -> dict[str, str]:
    seeds = seeds_of(engine, run_id)
    return {SEEDS_ENV: ",".join(map(str, seeds))} if seeds else {}


def budget_problem(engine: Engine, run: dict[str, Any], report: RunReport, config: RepoConfig,
                   planned: dict[str, Any] | None) -> str | None:
    """For a reproduction: the planned FLOPs become N x the single run's (every later check and quota sees the
    total); over ``budgets.max_flops_per_speedrun`` is refused here."""
    seeds = seeds_of(engine, run["run_id"])
    if not seeds or not planned or not planned.get("model_flops"):
        return None
    single = float(planned["model_flops"])
    report.planned_flops = single * len(seeds)
    cap = config.budgets.max_flops_per_speedrun
    if report.planned_flops > cap:
        return (f"the {len(seeds)}-seed reproduction needs {len(seeds)} x {single:.3g} = {report.planned_flops:.3g} "
                f"model FLOPs, over the speedrun budget of {cap:.3g} (`budgets.max_flops_per_speedrun`)")
    return None


# -- decisions (pure) -----------------------------------------------------------------------------------------------
def judge(bpbs: list[float], claimed: float | None, tolerance: float) -> tuple[Summary | None, bool, str]:
    """(summary, reproduces, verdict). Needs two seeds; the claim must lie within max(tolerance, CI half-width)
    of the mean; with no single-run claim, the seeds' std must be within the tolerance."""
    if not bpbs:
        return None, False, "no seed produced results"
    s = summarize(bpbs)
    if s.n < 2:
        return s, False, "only one seed produced results: a single seed is a run, not a reproduction"
    allowed = max(tolerance, s.half_width)
    if claimed is None:
        ok = s.std <= tolerance
        return s, ok, (f"seeds agree: std {s.std:.4f} <= tolerance {tolerance:g}" if ok else
                       f"seeds disagree: std {s.std:.4f} > tolerance {tolerance:g}")
    gap = abs(s.mean - claimed)
    ok = gap <= allowed
    return s, ok, (f"the submission's BPB {claimed:.4f} is {gap:.4f} from the seeds' mean "
                   f"{'within' if ok else 'beyond'} the allowed {allowed:.4f} (max of tolerance {tolerance:g} "
                   f"and the 95% interval's half-width)")


def current_record(records: list[Reproduction], track: str, flops: float) -> Reproduction | None:
    """The best accepted record of ``track`` using at most ``flops`` (the frontier point at that budget)."""
    eligible = [r for r in records if r.track == track and r.record and r.record.accepted and r.summary
                and r.model_flops is not None and r.model_flops <= flops * (1 + 1e-9)]
    return min(eligible, key=lambda r: (r.summary.mean if r.summary else 0.0, r.created_at), default=None)


def decide_record(bpbs: list[float], flops: float, track: str, records: list[Reproduction],
                  threshold: float) -> RecordDecision:
    prev = current_record(records, track, flops)
    if prev is None:
        return RecordDecision(accepted=True, threshold=threshold,
                              reason=f"first reproduced record of track `{track}` at {flops:.3g} FLOPs or fewer")
    base = dict(threshold=threshold, previous_run_id=prev.run_id,
                previous_mean_bpb=prev.summary.mean if prev.summary else None)
    ref = prev.bpbs()
    if len(ref) < 2:
        return RecordDecision(accepted=False, reason=f"the current record `{prev.run_id}` has fewer than 2 seeds "
                              "to test against", **base)
    p = welch_less(bpbs, ref)
    mean = sum(bpbs) / len(bpbs)
    prev_mean = sum(ref) / len(ref)
    if p < threshold:
        return RecordDecision(accepted=True, p_value=p, reason=(
            f"beats record `{prev.run_id}` ({prev_mean:.4f} BPB at {prev.model_flops:.3g} FLOPs): mean "
            f"{mean:.4f}, one-sided Welch p = {p:.2g} < {threshold:g}"), **base)
    worse = "is not lower than" if mean >= prev_mean else "is lower than"
    return RecordDecision(accepted=False, p_value=p, reason=(
        f"not a record: mean {mean:.4f} {worse} record `{prev.run_id}`'s {prev_mean:.4f} BPB (at "
        f"{prev.model_flops:.3g} FLOPs) and one-sided Welch p = {p:.2g} is not below {threshold:g}"), **base)


def integrity_problems(seeds: list[SeedRun], sha: str, claimed_shas: dict[int, str | None], track: str,
                       records: list[Reproduction]) -> list[str]:
    """Why these seeds cannot stand as a record of ``track`` (empty when they can)."""
    from runner.speedrun import load_speedrun_tracks

    problems: list[str] = []
    spec = load_speedrun_tracks().get(track)
    if spec is None:
        problems.append(f"track `{track}` is not a speedrun track")
    want_evals = [e.name for e in spec.eval.sets] if spec else None
    for s in seeds:
        if s.bpb is None:
            continue
        if want_evals is not None and s.eval_sets != want_evals:
            problems.append(f"seed {s.seed}: eval sets {s.eval_sets} are not the track's {want_evals}")
        if claimed_shas.get(s.seed) and claimed_shas[s.seed] != sha:
            problems.append(f"seed {s.seed}: its provenance names commit {str(claimed_shas[s.seed])[:12]}, "
                            f"not the approved {sha[:12]}")
    prints = {s.data_fingerprint for s in seeds if s.bpb is not None}
    if len(prints) > 1:
        problems.append(f"the seeds read different data (fingerprints {', '.join(sorted(p or '?' for p in prints))})")
    known = {r.seeds[0].data_fingerprint for r in records if r.track == track and r.record and r.record.accepted
             and r.seeds and r.seeds[0].data_fingerprint}
    if prints and known and not prints & known:
        problems.append(f"data fingerprint {next(iter(prints))} differs from the track's records ({', '.join(known)})")
    return problems


# -- I/O ------------------------------------------------------------------------------------------------------------
def load_reproductions(prefix: str) -> list[Reproduction]:
    """Every reproduction the lab wrote under ``{prefix}/reproductions`` (unreadable files are skipped)."""
    from fsspec.core import url_to_fs

    fs, root = url_to_fs(store.join(prefix, "reproductions"))
    out = []
    for path in sorted(fs.glob(f"{root}/*/{REPRODUCTION_FILE}")):
        try:
            out.append(Reproduction.model_validate_json(fs.cat_file(path)))
        except (OSError, ValueError):
            continue
    return out


def _claim(s: RunServices, run: dict[str, Any]) -> float | None:
    """The submission's own BPB: the latest lab run (not a reproduction) of the same file on this PR."""
    for r in reversed(s.ledger.runs(run["repo"], run["pr"])):
        if r["experiment"] != run["experiment"] or r["status"] != "succeeded" or seeds_of(s.ledger.engine, r["run_id"]):
            continue
        rep = s.states.get(r["run_id"])
        if rep is not None and rep.results:
            return float(rep.results["bpb"])
    return None


def _attested_seeds(s: RunServices, run: dict[str, Any], report: RunReport,
                    prefix: str) -> tuple[list[SeedRun], dict[int, str | None], str]:
    """Each seed of the launch, its results validated and attested (written under ``attested/{run_id}/seed<S>``);
    (seeds, the commit each seed's provenance names, the speedrun track)."""
    from bot.runs.results_io import attest_results
    from runner.schema import ResultsError, dumps_results, loads_results

    seeds: list[SeedRun] = []
    shas: dict[int, str | None] = {}
    track = None
    started = datetime.fromisoformat(report.job_started_at) if report.job_started_at else None
    finished = datetime.fromisoformat(report.job_finished_at) if report.job_finished_at else None
    for seed, data in read_seeds(prefix, run["run_id"]):
        if data is None:
            seeds.append(seed)
            continue
        try:
            results = loads_results(data, f"seed {seed.seed} results.json")
        except ResultsError as err:
            seeds.append(seed.model_copy(update={"outcome": "invalid", "error": str(err)}))
            continue
        attested, _ = attest_results(results, run_id=run["run_id"], sha=run["sha"], started_at=started,
                                     finished_at=finished, private_pem=s.signing_key)
        url = store.join(prefix, "attested", run["run_id"], f"seed{seed.seed}", "results.json")
        store.atomic_write_text(url, dumps_results(attested))
        track = track or results.track
        shas[seed.seed] = results.provenance.git_sha
        seeds.append(seed.model_copy(update=dict(
            bpb=results.bpb, model_flops=results.model_flops, run_id=results.run_id, results_url=url,
            data_fingerprint=results.provenance.data_fingerprint, eval_sets=list(results.eval),
            wandb_url=results.tracking.wandb_url)))
    return seeds, shas, track or "unknown"


def _people(s: RunServices, run: dict[str, Any], report: RunReport) -> tuple[str, str | None]:
    """(author, affiliation): the PR's author and the preregistration's affiliation, never a results file's."""
    from bot.forms.linking import body_preregistration

    pull = s.gh(run).get_pull(run["repo"], run["pr"])
    issue = report.preregistration or body_preregistration(pull.get("body"))
    prereg = s.ledger.preregistration(run["repo"], issue) if issue else None
    affiliation = str((prereg or {}).get("fields", {}).get("affiliation") or "").strip() or None
    return (pull.get("user") or {}).get("login") or "unknown", affiliation


def build(s: RunServices, run: dict[str, Any], report: RunReport, prefix: str) -> Reproduction:
    """The signed aggregate of a finished reproduction: seeds, summary, verdict, integrity, record decision."""
    config = s.repo_config(run)
    author, affiliation = _people(s, run, report)
    seeds, shas, track = _attested_seeds(s, run, report, prefix)
    records = [r for r in load_reproductions(prefix) if r.run_id != run["run_id"]]
    problems = integrity_problems(seeds, run["sha"], shas, track, records)
    bpbs = [x.bpb for x in seeds if x.bpb is not None]
    flops = [x.model_flops for x in seeds if x.model_flops is not None]
    tol = config.speedrun.tolerance(track)
    claimed = _claim(s, run)
    summary, reproduces, verdict = judge(bpbs, claimed, tol)
    if problems:
        reproduces, verdict = False, "integrity check failed: " + "; ".join(problems)
    decision = None
    if reproduces and flops:
        decision = decide_record(bpbs, max(flops), track, records, config.speedrun.p_threshold(track))
    repo_url = f"https://github.com/{run['repo']}"
    links = {"pr": f"{repo_url}/pull/{run['pr']}", "code": f"{repo_url}/tree/{run['sha']}/{run['experiment']}"}
    links.update({k: v for k, v in (("execution", report.execution_url), ("wandb", report.wandb_url)) if v})
    rep = Reproduction(
        run_id=run["run_id"], repo=run["repo"], pr=run["pr"], sha=run["sha"], experiment=run["experiment"],
        name=run["experiment"].rsplit("/", 1)[-1].removesuffix(".py"), track=track, author=author,
        affiliation=affiliation, requested_by=run["requested_by"], seeds=seeds, summary=summary,
        model_flops=max(flops) if flops else None, claimed_bpb=claimed, tolerance_bpb=tol, reproduces=reproduces,
        verdict=verdict, problems=problems, record=decision, links=links, created_at=datetime.now(UTC),
    )
    return sign_reproduction(rep, s.signing_key) if s.signing_key else rep


def publish_reproduction(s: RunServices, run: dict[str, Any], report: RunReport) -> bool:
    """Publish a finished reproduction (each milestone once). False when the job never ran its steps (refused,
    cancelled, crashed before the executor): the single-run path reports that."""
    from bot.github.render import marker, render
    from runner.executor.records import RecordError

    prefix = s.prefix(s.repo_config(run))
    url = store.join(prefix, "reproductions", run["run_id"], REPRODUCTION_FILE)
    if not report.has("reproduction"):
        if report.outcome in ("refused", "cancelled"):
            return False
        try:
            doc = build(s, run, report, prefix)
        except (FileNotFoundError, RecordError):
            return False
        store.atomic_write_text(url, doc.model_dump_json(indent=2))
        s.states.mark(report, "reproduction")
    doc = Reproduction.model_validate_json(store.read_text(url))
    if not report.has("comment_final"):
        body = render("reproduction.md.j2", marker=Markup(marker("run", run["run_id"])), rep=doc, run=run,
                      reason=report.reason if report.outcome != "succeeded" else None)
        s.upsert_comment(run, body)
        s.states.mark(report, "comment_final")
    if not report.has("check_done"):
        ok = [x for x in doc.seeds if x.bpb is not None]
        conclusion = "success" if doc.reproduces else ("neutral" if ok else "failure")
        summary = (f"{len(ok)}/{len(doc.seeds)} seeds; " + (f"BPB {doc.summary.mean:.4f} ± {doc.summary.half_width:.4f}"
                   " (95% CI). " if doc.summary else "") + doc.verdict)
        s.publisher(run).check_run(run["repo"], run["run_id"], run["sha"], status="completed", conclusion=conclusion,
                                   title=f"reproduction: {run['experiment']}"[:200], summary=summary[:60000],
                                   details_url=report.dashboard_url or report.wandb_url)
        s.states.mark(report, "check_done")
    status = "succeeded" if any(x.bpb is not None for x in doc.seeds) else "failed"
    if run["status"] != status:
        s.ledger.set_run_status(run["run_id"], status, doc.verdict[:500])
    report.phase = "done"
    s.states.save(report)
    return True
