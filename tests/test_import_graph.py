"""The project's import graph, read from the source with ``ast`` (nothing is imported): no circle between modules,
and imports only in the package direction.

Every ``import`` counts, at module level and inside functions (a function-level import is a circle put off, not
removed); only imports under ``if TYPE_CHECKING:`` are left out, since they never run. An edge goes to the
deepest project module named (``from bot.x import y`` is an edge to ``bot.x.y`` when that is a module, else to
``bot.x``); the parent packages an import also runs are not edges, so a package ``__init__`` that re-exports its
children does not make every child a circle.

Direction: ``runner`` imports neither ``bot`` nor ``leaderboard``, ``leaderboard`` does not import ``bot``;
``templates`` is a data package anyone may import; the Python files it carries as data (the experiments
``openlab init`` writes, in folders without ``__init__.py``) are not project modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "runner", "leaderboard", "templates")
# package -> the project packages it must not import
FORBIDDEN = {"runner": {"bot", "leaderboard"}, "leaderboard": {"bot"}, "templates": {"bot", "runner", "leaderboard"}}


def project_modules(root: Path = ROOT) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is it a package ``__init__``) for every module of the project's packages."""
    modules: dict[str, tuple[Path, bool]] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if any(not (folder / "__init__.py").exists() for folder in path.parents if folder.is_relative_to(root / package)):
                continue  # a data file, not a module: e.g. the experiments `openlab init` writes (templates/init/)
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement in the tree, at any depth, except the bodies of ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def _deepest(name: str, modules: dict[str, tuple[Path, bool]]) -> str | None:
    """The longest prefix of ``name`` that is a project module (None when it is not in the project)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def import_graph(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """Module -> {imported project module: line of the first such import}."""
    modules = project_modules(root)
    graph: dict[str, dict[str, int]] = {}
    for module, (path, is_package) in modules.items():
        edges: dict[str, int] = {}
        package = module if is_package else module.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base_parts = package.split(".")
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [f"{base}.{alias.name}" for alias in node.names] if base else []
            for target in targets:
                found = _deepest(target, modules)
                if found and found != module:
                    edges.setdefault(found, node.lineno)
        graph[module] = edges
    return graph


def find_cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    """One import circle as [a, b, ..., a], or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    for start in sorted(graph):
        if state.get(start):
            continue
        path = [start]
        iters = [iter(sorted(graph[start]))]
        state[start] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                iters.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                iters.append(iter(sorted(graph.get(nxt, {}))))
    return None


def _describe(cycle: list[str], graph: dict[str, dict[str, int]]) -> str:
    return "\n".join(f"  {a} (line {graph[a][b]}) -> {b}" for a, b in zip(cycle, cycle[1:], strict=False))


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The reader itself: relative, function-level and from-package imports are edges; TYPE_CHECKING ones are not."""
    pkg = tmp_path / "bot"
    (pkg / "sub").mkdir(parents=True)
    for package in PACKAGES[1:]:
        (tmp_path / package).mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import c\n")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bot import b\n")
    (pkg / "b.py").write_text("def f():\n    from .sub import c\n    return c\n")
    (pkg / "sub" / "c.py").write_text("from ..a import x\nimport bot.sub.d as d\nfrom bot import b\n")
    (pkg / "sub" / "d.py").write_text("import json\n")
    graph = import_graph(tmp_path)
    assert graph["bot.a"] == {}
    assert set(graph["bot.b"]) == {"bot.sub.c"}
    assert set(graph["bot.sub.c"]) == {"bot.a", "bot.sub.d", "bot.b"}
    assert set(graph["bot.sub"]) == {"bot.sub.c"}
    assert find_cycle(graph) == ["bot.b", "bot.sub.c", "bot.b"]
    (pkg / "sub" / "c.py").write_text("from ..a import x\n")
    assert find_cycle(import_graph(tmp_path)) is None


def test_no_import_circle() -> None:
    graph = import_graph()
    cycle = find_cycle(graph)
    assert cycle is None, "import circle:\n" + _describe(cycle or [], graph)


def test_imports_follow_the_package_direction() -> None:
    wrong = [
        f"{module} (line {line}) imports {target}"
        for module, edges in sorted(import_graph().items())
        for target, line in sorted(edges.items())
        if target.split(".")[0] in FORBIDDEN.get(module.split(".")[0], set())
    ]
    assert not wrong, "imports against the package direction:\n" + "\n".join(wrong)
