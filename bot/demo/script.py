"""`openlab demo`: the whole lab lifecycle, scripted, on embedded defaults.

A contributor (ada) preregisters a speedrun from the issue form and opens a PR with her experiment; a
maintainer (maria) comments `/run`; the bot plans it, dispatches it to Ray pinned to the approved commit, the
tiny CPU speedrun trains for real, the reconciler posts results and the Pareto update, commits the signed
results, and the run lands on the leaderboard. Every step is printed as it happens; at the end the site and a
transcript of the threads (as GitHub would show them) are written under the work dir.
"""

from __future__ import annotations

import glob
import json
import os
import time
from pathlib import Path

from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from bot.demo.lab import BOT, REPO, SITE_URL, TOKEN, DemoLab
from bot.sandbox.transcript import fetch_thread, localize_images, plain_text, write_transcript

SPEEDRUN_FORM = """### Author name

Ada Lovelace

### Affiliation

Analytical Engines

### URL

_No response_

### Description

A 4-layer byte-level Llama on the builtin corpus: the CPU reference speedrun, re-run by a newcomer.

### Track

budget_1e15

### Planned FLOPs

1e13

### Starter branch

- [ ] Create a starter branch and draft PR for me
"""

EXPERIMENT = '''"""ada_tiny: the CPU reference speedrun (see config.yaml), through the standard speedrun steps."""

from pathlib import Path

from runner.config import load_config
from runner.speedrun import default_speedrun

STEPS = default_speedrun("ada_tiny", load_config(Path(__file__).with_name("config.yaml")))
'''


def speedrun_config(git_dir: Path, steps: int) -> str:
    """ada's config: the example speedrun `openlab init` wrote, renamed, with `steps` steps."""
    text = (git_dir / "experiments/speedrun/example/config.yaml").read_text()
    # `track: cpu` is the speedrun's rule set (fixed data and eval set, runner.speedrun); the leaderboard band
    # the issue form names (budget_1e15) is where the result is ranked.
    return text.replace("name: example", "name: ada_tiny").replace("steps: 200", f"steps: {steps}")


class Narrator:
    def __init__(self, console: Console) -> None:
        self.c = console
        self.seen: set[tuple[int, int, str]] = set()

    def step(self, text: str) -> None:
        self.c.rule(f"[bold]{text}")

    def says(self, who: str, text: str) -> None:
        self.c.print(
            Panel(Markdown(text), title=f"[bold cyan]{who}", title_align="left", border_style="cyan")
        )

    def bot(self, lab: DemoLab, number: int) -> None:
        """Print every bot comment on the thread not printed before (or changed since)."""
        for c in lab.bot_comments(number):
            key = (number, c["id"], c["body"])
            if key in self.seen:
                continue
            self.seen.add(key)
            self.c.print(
                Panel(
                    Markdown(plain_text(c["body"])),
                    title=f"[bold green]{BOT}[/] on #{number}",
                    title_align="left",
                    border_style="green",
                )
            )


def run_demo(workdir: Path, steps: int = 200, console: Console | None = None) -> dict[str, Path]:
    console = console or Console()
    say = Narrator(console)
    os.environ.setdefault("WANDB_MODE", "offline")
    t0 = time.monotonic()
    say.step("Starting the lab: local Ray head, GitHub sandbox, bot server, store")
    with DemoLab(workdir) as lab:
        console.print(
            f"Ray {lab.head.url if lab.head else ''} · sandbox {lab.sandbox.url if lab.sandbox else ''} · "
            f"bot {lab.server.url if lab.server else ''} · store {lab.store}"
        )
        console.print(f"lab repository {REPO}: a fresh git repository set up by `openlab init` ({lab.git_dir}); "
                      "its signing key is outside it")

        say.step("1. ada preregisters a speedrun from the issue form")
        say.says("ada opens issue: [Speedrun]: ada_tiny", SPEEDRUN_FORM)
        issue = lab.driver.open_issue(REPO, "ada", "[Speedrun]: ada_tiny", SPEEDRUN_FORM, labels=["speedrun"])
        lab.wait(lambda: lab.bot_comments(issue), 60, "the preregistration comment")
        say.bot(lab, issue)
        labels = lab.driver.thread(REPO, issue)["labels"]
        console.print(f"labels on #{issue}: {', '.join(labels)}")

        say.step("2. ada opens a pull request with her experiment")
        files = {
            "experiments/speedrun/ada_tiny/ada_tiny.py": EXPERIMENT,
            "experiments/speedrun/ada_tiny/config.yaml": speedrun_config(lab.git_dir, steps),
        }
        say.says(
            "ada opens PR: ada_tiny speedrun",
            f"Preregistration: #{issue}\n\n" + "\n".join(f"- `{p}`" for p in files),
        )
        pr = lab.open_pull("ada", "ada-tiny", files, "ada_tiny speedrun", f"Preregistration: #{issue}")
        lab.wait(
            lambda: any(
                c["name"] == "openlab/plan" and c["status"] == "completed"
                for c in lab.driver.thread(REPO, pr)["check_runs"]
            ),
            240,
            "the plan check",
        )
        say.bot(lab, pr)

        say.step("3. maria (maintainer) approves with /run")
        say.says("maria comments on the PR", "/run")
        lab.driver.comment(REPO, pr, "maria", "/run")
        run = lab.wait(
            lambda: (lab.services.ledger.runs(REPO, pr) or [None])[-1], 60, "the run to be recorded"
        )
        lab.wait(
            lambda: any(f"openlab:run:{run['run_id']}" in c["body"] for c in lab.bot_comments(pr)),
            120,
            "the run comment",
        )
        say.bot(lab, pr)

        say.step(f"4. Ray trains {run['run_id']} on the CPU")
        _follow_training(lab, run["run_id"], steps, console)
        say.step("5. The reconciler reports back")
        final = lab.reconciler.run_until_done(run["run_id"], timeout_s=600)
        say.bot(lab, pr)
        console.print(f"run {run['run_id']}: [bold]{final.get('status')}[/]")
        if final.get("status") != "succeeded":
            from runner.errors import OpenlabError

            raise OpenlabError(f"demo: the run ended {final.get('status')}: {lab.services.states.get(run['run_id'])}")

        say.step("6. The run lands on the leaderboard")
        paths = _publish(lab, workdir, pr, issue, console)
    paths["elapsed"] = Path(f"{time.monotonic() - t0:.0f}s")
    console.rule("[bold]Done")
    console.print(
        f"transcript: {paths['transcript']}\nsite:       {paths['site'] / 'index.html'}\n"
        f"run page:   {paths['run_page']}\nexecution:  {paths['execution']}\n"
        f"took {paths['elapsed']}\n"
        f"open the site as a file (data inlined) or serve it: python3 -m http.server -d {paths['site']} 8765\n"
        f"live rebuild from the results: openlab leaderboard serve --results '{workdir / 'leaderboard' / '**' / 'results.json'}'"
        f" --public-key {workdir / 'openlab.pub'} --out {workdir / 'site-live'}"
    )
    return paths


def _follow_training(lab: DemoLab, run_id: str, steps: int, console: Console) -> None:
    """A progress bar fed by the job's own metrics.jsonl (the authoritative log) while the reconciler runs."""
    columns = (
        TextColumn("[bold]train"),
        BarColumn(),
        TextColumn("step {task.completed:.0f}/{task.total:.0f}"),
        TextColumn("{task.fields[info]}"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task("train", total=steps, info="waiting for the job to start")
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            lab.reconciler.run_once()
            report = lab.services.states.get(run_id)
            last = _last_metrics(lab.store)
            if last:
                info = f"loss {last.get('train/loss', float('nan')):.3f}"
                if "throughput/tokens_per_second" in last:
                    info += f" · {last['throughput/tokens_per_second']:,.0f} tok/s"
                bar.update(task, completed=min(int(last.get("step", 0)), steps), info=info)
            if report is not None and report.phase in ("finished", "done"):
                bar.update(task, completed=steps)
                return
            time.sleep(1.0)


def _last_metrics(store: Path) -> dict | None:
    files = sorted(glob.glob(str(store / "**" / "metrics.jsonl"), recursive=True), key=os.path.getmtime)
    if not files:
        return None
    last = None
    with open(files[-1]) as f:
        for line in f:
            if '"train/loss"' in line:
                last = line
    return json.loads(last) if last else None


def _publish(lab: DemoLab, workdir: Path, pr: int, issue: int, console: Console) -> dict[str, Path]:
    """Merge the committed results into the leaderboard, build the one site, write the transcript."""
    from bot.github.client import GitHubClient
    from bot.reports.build import build_reports
    from bot.reports.collect import collect
    from bot.reports.model import Overlay
    from bot.reports.render import write_reports
    from leaderboard.execution_pages import page_name, write_execution_pages
    from leaderboard.site import BuildOptions, build_site
    from leaderboard.tracks import default_tracks, parse_tracks

    branch_files = lab.driver.repo_state(REPO)["files"]["ada-tiny"]
    board = workdir / "leaderboard"
    for path, text in branch_files.items():  # what merging the PR brings: results with their metrics and chart
        if path.endswith(("results.json", "metrics.jsonl", "pareto.svg")):
            dst = board / path
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(text)
    site = workdir / "site"
    sources = [str(board / "**" / "results.json")]
    own = sorted(glob.glob(str(lab.git_dir / "experiments" / "**" / "results.json"), recursive=True))
    sources += own
    report = build_site(
        BuildOptions(
            sources=sources,
            out=site,
            tracks=parse_tracks(default_tracks(), "tracks"),
            public_pem=lab.public_pem,
            repo_url=f"https://github.com/{REPO}",
            site_title="openlab demo lab",
        )
    )
    for w in report.warnings:
        console.print(f"[yellow]warning:[/] {w}")
    views, _ = write_execution_pages(str(lab.store), site)
    assert lab.sandbox is not None
    snap = collect(GitHubClient(lab.sandbox.url, lambda: TOKEN, write_interval_s=0), REPO)
    execs = [(v.run_id, v.experiment, v.status) for v in views]
    write_reports(build_reports(snap, Overlay(), BOT, executions=execs), site, REPO, snap.html_url)
    console.print(
        f"site: {report.runs} run(s) on the leaderboard, {len(views)} execution page(s), reports index"
    )

    threads = [
        fetch_thread(lab.sandbox.url, REPO, issue, "issue", "ada"),
        fetch_thread(lab.sandbox.url, REPO, pr, "pull", "ada"),
    ]
    for t in threads:  # the lab's public site is ./site next to the transcript
        for c in t.comments:
            c.body = c.body.replace(SITE_URL, "site")
    gh = GitHubClient(lab.sandbox.url, lambda: TOKEN, write_interval_s=0)
    localize_images(threads, REPO, lambda path, ref: gh.get_contents(REPO, path, ref), workdir / "repo-files")
    transcript = write_transcript(threads, REPO, BOT, workdir / "transcript.html")
    run = lab.services.ledger.runs(REPO, pr)[-1]
    runs = sorted((site / "runs").glob("*.html")) if (site / "runs").is_dir() else []
    return {
        "transcript": transcript,
        "site": site,
        "execution": site / "executions" / page_name(run["run_id"]),
        "run_page": runs[0] if runs else site / "index.html",
    }
