"""The layer rule and the import graph: environments/ and training/ never need Django or lab, and lab's apps
(and environments' and training's modules) import one another without cycles, counting imports inside functions,
except the known cycles listed in KNOWN_CYCLES, a list that only shrinks."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Runs in a fresh interpreter: this process has Django loaded already. The blocker refuses Django and lab
# (and the Django-only packages) and records every attempt, so a guarded `try: import django` is caught too.
_PROBE = textwrap.dedent(
    """
    import importlib, importlib.abc, json, sys

    BLOCKED = {"django", "lab", "rest_framework", "channels", "celery", "drf_spectacular"}
    attempts = []

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                attempts.append(name)
                raise ModuleNotFoundError(f"{name} is not importable here", name=name)
            return None

    sys.meta_path.insert(0, Blocker())
    imported, failed = [], {}
    for name in json.loads(sys.stdin.read()):
        try:
            importlib.import_module(name)
            imported.append(name)
        except Exception as exc:
            failed[name] = f"{type(exc).__name__}: {exc}"
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    print(json.dumps({"imported": imported, "failed": failed, "attempts": attempts, "loaded": loaded}))
    """
)


def _module_files(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package).rglob("*.py") if "migrations" not in p.parts)


@pytest.mark.slow
def test_environments_and_training_import_without_django_or_lab() -> None:
    # From the files, not pkgutil: a folder without __init__.py (training/recipes) is a namespace package that
    # pkgutil's walk would skip. __main__ modules run their CLI when imported.
    modules = sorted(_module_name(p) for package in ("environments", "training") for p in _module_files(package) if p.stem != "__main__")
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], input=json.dumps(modules), cwd=ROOT, capture_output=True, text=True, timeout=300, check=True
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["failed"] == {}, report["failed"]
    assert report["attempts"] == [] and report["loaded"] == [], f"imports Django or lab: {report['attempts']}"
    assert report["imported"] == modules and "training.recipes.grpo" in modules and "environments.storebench.world" in modules


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def _imports(path: Path) -> set[str]:
    """Modules `path` imports: at module level (inside `if`/`try` too) and inside functions and methods, which
    run later but tie the modules together just the same; not `if TYPE_CHECKING:` blocks, which never run."""
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    found: set[str] = set()
    nodes: list[ast.AST] = [ast.parse(path.read_text(), filename=str(path))]
    while nodes:
        node = nodes.pop()
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            nodes.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # `from pkg import module`
        nodes.extend(ast.iter_child_nodes(node))
    return found


def _import_graph(package: str, node_of: Callable[[str], str]) -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in _module_files(package)}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        source = node_of(name)
        for target in _imports(path):
            if target in modules and node_of(target) != source:
                graph.setdefault(source, set()).add(node_of(target))
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one node (Tarjan), each as a closed path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_closed_path(graph, component) for component in sorted(components)]


def _closed_path(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest cycle through the component's first node, e.g. [a, b, a] (breadth-first inside the component)."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                return [*paths[node], start]
            if nxt in members and nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                queue.append(nxt)
    raise AssertionError(f"{component} is not strongly connected")


def _lab_app(module: str) -> str:
    """lab.rollouts.api -> rollouts; a module directly under lab/ (lab.edge) is a node of its own."""
    return module.split(".")[1] if module.count(".") >= 1 else module


def test_the_cycle_finder_names_each_cycle_as_a_closed_path() -> None:
    graph = {"a": {"b"}, "b": {"c", "a"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert _cycles(graph) == [["a", "b", "a"], ["d", "e", "d"]]
    assert _cycles({"a": {"b"}, "b": {"c"}}) == []


# Groups of modules that still import one another (counting imports inside functions), each as the cycle the
# finder names. A known debt that only shrinks: breaking one fails the test until it is taken off this list, and
# a new cycle fails it at once.
KNOWN_CYCLES: dict[str, list[list[str]]] = {
    "lab": [],
    "environments": [
        # workdesk's calculator and its functions (workdesk is under security work in another branch).
        ["environments.workdesk.calc", "environments.workdesk.calc_functions", "environments.workdesk.calc"],
    ],
    "training": [
        # the scripted zoo's builder and the scripted players (training/zoo is being changed in another branch).
        ["training.scripted", "training.zoo.build", "training.scripted"],
    ],
}


def _described(cycles: list[list[str]]) -> str:
    return "\n".join(" -> ".join(cycle) for cycle in cycles) or "none"


def test_imports_inside_functions_count() -> None:
    """A function-level import is an edge: environments.team once reached the runner only from inside a function."""
    path = ROOT / "environments" / "team.py"
    assert "environments.steps" in _imports(path)
    sample = ROOT / "environments" / "analyzers.py"  # analyzer_for imports the registry inside the function
    assert "environments.registry" in _imports(sample)


@pytest.mark.parametrize(
    ("package", "node_of"),
    [("lab", _lab_app), ("environments", lambda module: module), ("training", lambda module: module)],
    ids=["lab apps", "environments modules", "training modules"],
)
def test_modules_import_one_another_only_in_the_known_shrinking_cycles(package: str, node_of: Callable[[str], str]) -> None:
    cycles = _cycles(_import_graph(package, node_of))
    new = [cycle for cycle in cycles if cycle not in KNOWN_CYCLES[package]]
    gone = [cycle for cycle in KNOWN_CYCLES[package] if cycle not in cycles]
    assert new == [], f"new import cycles in {package}/ (imports inside functions count):\n{_described(new)}"
    assert gone == [], f"broken cycles still listed in KNOWN_CYCLES[{package!r}]; take them off:\n{_described(gone)}"
