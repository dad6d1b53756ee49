"""Views, API views and management commands stay thin (STYLE rule 2): they call selectors in their app's
selectors.py instead of building queries (`.objects.filter(`, `.objects.exclude(`, `.annotate(`) themselves."""

from __future__ import annotations

import ast
from pathlib import Path

LAB = Path(__file__).resolve().parents[2] / "lab"
QUERY_BUILDERS = ("filter", "exclude")

# (module, function) pairs that may still build a query, and why.
ALLOWED = {
    # A row by its id for the operator, who sees every project; the refusal names the option.
    ("lab/federation/management/commands/federate.py", "_run"),
    ("lab/federation/management/commands/federate.py", "_decide"),
    ("lab/improve/management/commands/improve.py", "_loop"),
}


def thin_modules(lab: Path = LAB) -> list[Path]:
    """The console's view modules, every app's views and API modules, and the management commands."""
    patterns = ("console/views/*.py", "*/views.py", "*/*_views.py", "*/api.py", "*/*_api.py", "*/management/commands/*.py")
    return sorted({path for pattern in patterns for path in lab.glob(pattern) if path.name != "__init__.py"})


def query_builds(path: Path, root: Path = LAB.parent) -> list[str]:
    """`path:line in function` for each query the module builds itself."""
    found: list[str] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
                method, receiver = child.func.attr, child.func.value
                on_manager = isinstance(receiver, ast.Attribute) and receiver.attr == "objects"
                if (method in QUERY_BUILDERS and on_manager) or method == "annotate":
                    where = str(path.relative_to(root))
                    if (where, name) not in ALLOWED:
                        found.append(f"{where}:{child.lineno} .{method}( in {name or 'module'}")
            visit(child, name)

    visit(ast.parse(path.read_text(), filename=str(path)), "")
    return found


def test_views_api_views_and_commands_build_no_queries() -> None:
    modules = thin_modules()
    assert len(modules) > 40 and LAB / "console/views/agents.py" in modules and LAB / "diagnoses/api.py" in modules
    offenders = [line for path in modules for line in query_builds(path)]
    assert offenders == [], "move these queries into a selector in the app's selectors.py (STYLE rule 2):\n" + "\n".join(offenders)


def test_the_allow_list_names_functions_that_still_exist() -> None:
    root = LAB.parent
    defined = {
        (str(p.relative_to(root)), n.name)
        for p in thin_modules()
        for n in ast.walk(ast.parse(p.read_text()))
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    assert defined >= ALLOWED, f"stale allow-list entries: {sorted(ALLOWED - defined)}"


def test_the_scan_finds_the_queries_it_forbids(tmp_path: Path) -> None:
    bad = tmp_path / "views.py"
    bad.write_text(
        "def page(request):\n"
        "    rows = Agent.objects.filter(project__in=projects).select_related('project')\n"
        "    rows = Agent.objects.exclude(kind='human')\n"
        "    rows = agent_list(projects=projects).annotate(n=Count('pk'))\n"
        "    rows = agent_list(projects=projects).filter(pk=1)\n"  # narrowing a selector's rows is not building one
        "    return Agent.objects.get(pk=1)\n"
    )
    assert [line.split(" ", 1)[1] for line in query_builds(bad, root=tmp_path)] == [
        ".filter( in page",
        ".exclude( in page",
        ".annotate( in page",
    ]
