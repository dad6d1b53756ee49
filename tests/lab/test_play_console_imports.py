"""`lab.play` and `lab.console` never import each other: what both need lives in neutral modules (lab.pages,
lab.tool_forms, the apps' selectors). Read from the source, so an import inside a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the directory holding the `lab` package


def imported_modules(path: Path, root: Path) -> set[str]:
    """Every module an `import` or `from ... import` in the file names, relative imports resolved."""
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def imports_of(app: str, other: str, root: Path = ROOT) -> list[str]:
    """`path: module` for each import of package lab.<other> by a module of lab.<app>."""
    found = []
    for path in sorted((root / "lab" / app).rglob("*.py")):
        hits = sorted(name for name in imported_modules(path, root) if name == f"lab.{other}" or name.startswith(f"lab.{other}."))
        found += [f"{path.relative_to(root).as_posix()}: {name}" for name in hits]
    return found


@pytest.mark.parametrize(("app", "other"), [("play", "console"), ("console", "play")])
def test_play_and_console_do_not_import_each_other(app: str, other: str) -> None:
    assert imports_of(app, other) == []


def test_the_check_sees_absolute_relative_and_function_level_imports(tmp_path: Path) -> None:
    (tmp_path / "lab" / "play").mkdir(parents=True)
    (tmp_path / "lab" / "play" / "views.py").write_text(
        "import lab.console.urls\nfrom ..console import selectors\nfrom lab.pages import page\n"
        "def f():\n    from lab.console.views.viewer import episode_viewer\n"
    )
    assert imports_of("play", "console", root=tmp_path) == [
        "lab/play/views.py: lab.console",
        "lab/play/views.py: lab.console.selectors",
        "lab/play/views.py: lab.console.urls",
        "lab/play/views.py: lab.console.views.viewer",
        "lab/play/views.py: lab.console.views.viewer.episode_viewer",
    ]
