"""Issue 18's one move: lay ``bot/`` out by concept (ingress, github, runs, plans, config, forms), in whatever tree
it runs in, with no change of behaviour.

Run from the repository root of a clean checkout: ``python tools/relayout_bot.py`` (``--dry-run`` prints the
plan and changes nothing). What it does, in order:

1. rewrites every reference to a moved module in every tracked text file (code, tests, docs, benchmarks,
   workflows, pyproject): dotted names (``import bot.x``, ``from bot.x import``, ``"bot.x:attr"`` entry points,
   ``"bot.x.y"`` monkeypatch targets, ``:mod:`bot.x``` in docstrings), ``from bot import x`` and
   ``from bot.handlers import plan_report`` (split per name when the names go to different places), and paths
   ``bot/x.py``. A dotted name is rewritten by its longest prefix that is a moved module, and only when it is not
   part of a longer name (``openlab.bot.dispatch``, a logger name, stays);
2. ``git mv`` each file (``git log --follow`` keeps its history); a module whose name becomes a package
   (``bot/github.py`` -> ``bot/github/client.py``) is moved aside first;
3. writes each new subpackage's ``__init__.py`` (a docstring saying what the folder holds);
4. puts the architecture section (``tools/relayout_readme.md``) into README.md before the configuration
   reference, unless the README already has an ``## Architecture`` heading;
5. sorts the import blocks it touched (``ruff --select I --fix``) and regenerates the configuration reference.

Modules the table does not name (added after it was written) stay where they are; their imports of moved modules
are rewritten like everyone else's. A module the table names that this tree lacks is skipped. The script refuses a
tree it has already laid out, and a dirty one (``--allow-dirty`` to override), so its diff is the move alone.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
from pathlib import Path

# old module -> new module. Folders: what comes in and how it is applied (ingress), GitHub plumbing (github),
# everything after `/run` (runs), planning PR code (plans), settings and repo policy (config), issue forms (forms).
# Left at the top of bot/: actions.py, executor.py, ledger.py, sticky.py (the core every folder uses), cli.py,
# keys_cli.py; and the packages handlers/, commands/, adopt/, demo/, reports/, sandbox/ as they are.
MOVES: dict[str, str] = {
    # ingress: the webhook server, its guards, the queue worker, the wiring, Actions mode, recovery
    "bot.app": "bot.ingress.app",
    "bot.serving": "bot.ingress.serving",
    "bot.ingress": "bot.ingress.guards",
    "bot.worker": "bot.ingress.worker",
    "bot.worker_process": "bot.ingress.worker_process",
    "bot.service": "bot.ingress.service",
    "bot.recovery": "bot.ingress.recovery",
    "bot.infra": "bot.ingress.infra",
    "bot.actions_mode": "bot.ingress.actions_mode",
    # github: the REST client, App auth, typed events, escaping and rendering what the bot posts
    "bot.github": "bot.github.client",
    "bot.auth": "bot.github.auth",
    "bot.events": "bot.github.events",
    "bot.escape": "bot.github.escape",
    "bot.render": "bot.github.render",
    # runs: approval to published result
    "bot.approval": "bot.runs.approval",
    "bot.budget": "bot.runs.budget",
    "bot.dispatch": "bot.runs.dispatch",
    "bot.jobs": "bot.runs.jobs",
    "bot.reconcile": "bot.runs.reconcile",
    "bot.reconcile_cli": "bot.runs.reconcile_cli",
    "bot.run_services": "bot.runs.services",
    "bot.run_state": "bot.runs.state",
    "bot.run_report": "bot.runs.report",
    "bot.run_publish": "bot.runs.publish",
    "bot.publish": "bot.runs.publisher",
    "bot.results_io": "bot.runs.results_io",
    "bot.reproductions": "bot.runs.reproductions",
    "bot.chart": "bot.runs.chart",
    # plans: the plan sandbox door and the plan report
    "bot.plan_sandbox": "bot.plans.sandbox",
    "bot.handlers.plan_report": "bot.plans.report",
    # config: process settings, the repo's openlab.yml, the reference table, quotas, trust
    "bot.settings": "bot.config.settings",
    "bot.repo_config": "bot.config.repo_config",
    "bot.config_reference": "bot.config.reference",
    "bot.quotas": "bot.config.quotas",
    "bot.trust": "bot.config.trust",
    # forms: issue forms (preregistration, Datashop) and linking PRs to them
    "bot.forms": "bot.forms.issue_forms",
    "bot.preregistration": "bot.forms.preregistration",
    "bot.datashop": "bot.forms.datashop",
    "bot.linking": "bot.forms.linking",
}

PACKAGE_DOCS: dict[str, str] = {
    "bot/ingress": "How events reach the bot and get applied: the webhook server (FastAPI) and its request guards, "
    "the queue worker\n(in-process or its own process), the wiring of settings to ledger, clients and worker, "
    "Actions mode, redelivery after\ndowntime, and the public note an infrastructure failure leaves.",
    "bot/github": "The bot's GitHub plumbing: the REST client, App and token auth, the typed webhook events, and "
    "the escaping and\ntemplates of everything the bot posts.",
    "bot/runs": "What happens after `/run`: the approved SHA, the budget, dispatch to Ray, the reconciler that "
    "follows each job,\nthe run's state and report, reading and attesting results, publishing them on the PR "
    "(comments, check runs,\nresults commit, chart), and `/verify` reproductions.",
    "bot/plans": "Planning PR code: the door to the plan sandbox (`runner.sandbox_plan`) and the plan report "
    "posted on the PR.",
    "bot/config": "Settings and policy: the process settings (`OPENLAB_*`), the repository's `.github/openlab.yml`, "
    "the configuration\nreference generated from both, run quotas, and who may start runs.",
    "bot/forms": "Issue forms: reading the repository's form templates, validating preregistrations and Datashop "
    "requests, and\nlinking a PR's experiment files to their preregistration issues.",
}

ROOT_SKIP = {"tools/relayout_bot.py", "tools/relayout_readme.md", "tests/test_relayout.py"}
README_SECTION = Path(__file__).with_name("relayout_readme.md")
_DOTTED = re.compile(r"(?<![\w.])bot(?:\.\w+)+")


def variable_offsets(source: str) -> set[int]:
    """Offsets of ``bot`` used as a variable in code (``bot.settings`` of a ``Bot``), which must not be rewritten.

    Nothing in the project binds the name ``bot`` to the package (``import bot.x`` unaliased); where a file
    does, its ``bot.x`` attribute chains are module references and none is protected."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    if any(isinstance(n, ast.Import) and any(a.name.startswith("bot.") and not a.asname for a in n.names)
           for n in ast.walk(tree)):
        return set()
    lines = re.findall(r"[^\n]*\n|[^\n]+$", source)  # ast counts lines by \n, not str.splitlines' breaks
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    # col_offset counts UTF-8 bytes; the regex offsets count characters
    return {starts[n.lineno - 1] + len(lines[n.lineno - 1].encode()[: n.col_offset].decode(errors="ignore"))
            for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "bot"}


def rewrite_dotted(text: str, moves: dict[str, str], protected: set[int] | None = None) -> str:
    """Each dotted ``bot.…`` name to its new home, by the longest prefix that is a moved module."""

    def one(match: re.Match[str]) -> str:
        if protected and match.start() in protected:
            return match.group(0)
        parts = match.group(0).split(".")
        for end in range(len(parts), 1, -1):
            old = ".".join(parts[:end])
            if old in moves:
                return ".".join([moves[old], *parts[end:]])
        return match.group(0)

    return _DOTTED.sub(one, text)


def rewrite_paths(text: str, moves: dict[str, str]) -> str:
    """``bot/x.py`` paths (docs, comments, Makefile) to their new place."""
    paths = {old.replace(".", "/") + ".py": new.replace(".", "/") + ".py" for old, new in moves.items()}
    pattern = re.compile(r"(?<![\w./-])(" + "|".join(re.escape(p) for p in sorted(paths, key=len, reverse=True)) + r")\b")
    return pattern.sub(lambda m: paths[m.group(1)], text)


def rewrite_from_package(source: str, moves: dict[str, str]) -> str:
    """``from bot import x`` / ``from bot.handlers import plan_report``: a moved submodule imported by name from
    its old package becomes ``from <new package> import <leaf> [as x]``; other names stay in the old statement."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        moved = [a for a in node.names if f"{node.module}.{a.name}" in moves]
        if not moved:
            continue
        indent = re.match(r"\s*", lines[node.lineno - 1]).group(0)  # type: ignore[union-attr]
        kept = [a for a in node.names if a not in moved]
        out: list[str] = []
        if kept:
            names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in kept)
            out.append(f"{indent}from {node.module} import {names}\n")
        for alias in moved:
            package, _, leaf = moves[f"{node.module}.{alias.name}"].rpartition(".")
            name = alias.asname or alias.name
            out.append(f"{indent}from {package} import {leaf}" + (f" as {name}" if name != leaf else "") + "\n")
        edits.append((node.lineno - 1, node.end_lineno or node.lineno, "".join(out)))
    for start, end, new in sorted(edits, reverse=True):
        lines[start:end] = [new]
    return "".join(lines)


_FILE_CHAIN = re.compile(r"(Path\(__file__\)(?:\.resolve\(\))?)(\.parents\[(\d+)\]|(?:\.parent(?!s))+)")


def deepen_file_refs(source: str, delta: int) -> str:
    """A module moved ``delta`` folders down still finds what it found from ``Path(__file__)``: one more
    ``.parent`` (or ``parents[N+1]``) per folder (``bot/forms.py`` reads the repository's ``.github/``)."""

    def one(match: re.Match[str]) -> str:
        if match.group(3) is not None:
            return f"{match.group(1)}.parents[{int(match.group(3)) + delta}]"
        return match.group(1) + match.group(2) + ".parent" * delta

    return _FILE_CHAIN.sub(one, source) if delta > 0 else source


def tracked_text_files(root: Path) -> list[Path]:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=root, check=True, capture_output=True).stdout
    files = []
    for name in names.decode().split("\0"):
        path = root / name
        if not name or name in ROOT_SKIP or not path.is_file() or path.is_symlink() or path.stat().st_size > 2_000_000:
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue
        try:
            data.decode()
        except UnicodeDecodeError:
            continue
        files.append(path)
    return files


def rewrite_tree(root: Path, moves: dict[str, str], dry_run: bool) -> list[Path]:
    changed = []
    for path in tracked_text_files(root):
        text = path.read_text()
        protected = variable_offsets(text) if path.suffix == ".py" else set()
        new = rewrite_paths(rewrite_dotted(text, moves, protected), moves)
        if path.suffix == ".py":
            new = rewrite_from_package(new, moves)
        if new != text:
            changed.append(path)
            if not dry_run:
                path.write_text(new)
    return changed


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True)


def move_files(root: Path, moves: dict[str, str], dry_run: bool) -> list[tuple[str, str]]:
    done: list[tuple[str, str]] = []
    plan = [(old, new) for old, new in moves.items() if (root / (old.replace(".", "/") + ".py")).is_file()]
    packages = {new.rpartition(".")[0].replace(".", "/") for _, new in plan}
    aside: dict[str, str] = {}
    for old, _ in plan:  # a module whose name becomes a package (bot/github.py -> bot/github/) moves aside first
        src = old.replace(".", "/") + ".py"
        if src[:-3] in packages:
            aside[src] = f"{src[:-3]}__relayout_tmp.py"
            if not dry_run:
                git(root, "mv", src, aside[src])
    for old, new in plan:
        src, dst = old.replace(".", "/") + ".py", new.replace(".", "/") + ".py"
        if not dry_run:
            (root / dst).parent.mkdir(parents=True, exist_ok=True)
            git(root, "mv", aside.get(src, src), dst)
            text = (root / dst).read_text()
            deeper = deepen_file_refs(text, dst.count("/") - src.count("/"))
            if deeper != text:
                (root / dst).write_text(deeper)
                print(f"{dst}: Path(__file__) references one folder deeper")
        done.append((src, dst))
    return done


def write_package_inits(root: Path, moved: list[tuple[str, str]], dry_run: bool) -> list[str]:
    written = []
    for _, dst in moved:
        folder = dst.rpartition("/")[0]
        init = root / folder / "__init__.py"
        if folder in PACKAGE_DOCS and not init.exists() and folder not in written:
            written.append(folder)
            if not dry_run:
                init.write_text(f'"""{PACKAGE_DOCS[folder]}\n"""\n')
                git(root, "add", str(init.relative_to(root)))
    return written


def insert_readme_section(root: Path, dry_run: bool) -> bool:
    readme = root / "README.md"
    if not readme.exists() or not README_SECTION.exists():
        return False
    text = readme.read_text()
    if re.search(r"^## Architecture\b", text, re.M):
        return False
    section = README_SECTION.read_text().strip() + "\n\n"
    anchor = re.search(r"^## Configuration reference\b", text, re.M)
    new = text[: anchor.start()] + section + text[anchor.start():] if anchor else text.rstrip() + "\n\n" + section
    if not dry_run:
        readme.write_text(new)
    return True


def tidy(root: Path, changed: list[Path], moved: list[tuple[str, str]]) -> None:
    """Sort the import blocks the rewrite touched (names moved between lines), then regenerate the config table."""
    where = dict(moved)
    rel = [str(p.relative_to(root)) for p in changed if p.suffix == ".py"]
    py = [where.get(name, name) for name in rel]
    if py:
        subprocess.run([sys.executable, "-m", "ruff", "check", "--quiet", "--select", "I", "--fix", *py], cwd=root)
    subprocess.run([sys.executable, "-c", "import sys; from runner.cli import main; "
                    "main(['config-reference', '--write'])"], cwd=root, env={**os.environ, "PYTHONPATH": str(root)})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print what would move and change; change nothing")
    parser.add_argument("--allow-dirty", action="store_true", help="run on a tree with uncommitted changes")
    args = parser.parse_args(argv)
    root = Path.cwd()
    if not (root / "bot").is_dir() or not (root / ".git").exists():
        print("relayout: run from the repository root (the folder holding bot/ and .git)", file=sys.stderr)
        return 2
    if (root / "bot" / "runs" / "dispatch.py").exists():
        print("relayout: bot/ is already laid out (bot/runs/dispatch.py exists); nothing to do", file=sys.stderr)
        return 1
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, check=True,
                           capture_output=True, text=True).stdout
    if dirty and not args.allow_dirty and not args.dry_run:
        print("relayout: the tree has uncommitted changes; commit them first (or --allow-dirty)", file=sys.stderr)
        return 1
    # only module files move (a name that is a package here, or missing, is left alone)
    moves = {old: new for old, new in MOVES.items() if (root / (old.replace(".", "/") + ".py")).is_file()}
    for old in sorted(set(MOVES) - set(moves)):
        print(f"skip {old}: no module file in this tree")
    changed = rewrite_tree(root, moves, args.dry_run)
    moved = move_files(root, moves, args.dry_run)
    inits = write_package_inits(root, moved, args.dry_run)
    readme = insert_readme_section(root, args.dry_run)
    for src, dst in moved:
        print(f"{'would move' if args.dry_run else 'moved'} {src} -> {dst}")
    print(f"references rewritten in {len(changed)} files; new packages: {', '.join(inits) or 'none'}; "
          f"README architecture section {'added' if readme else 'already there'}")
    if not args.dry_run:
        tidy(root, changed, moved)
        print("next: ruff check . && python -m pytest -q tests/test_import_graph.py && make test; then commit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
