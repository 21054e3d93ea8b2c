"""The layout holds: the product never imports the harness, no import circles between files, no
module over 400 lines, and experiments/ with its jobs in sub-packages (at most 8 files at its
top level)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

PACKAGES = ("treadwise", "experiments")
MAX_LINES = 400


def sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (REPO / package).rglob("*.py"))


def file_of(module: str) -> Path | None:
    """The file a dotted module name loads (a package: its __init__), if it is ours."""
    base = REPO.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def imports(path: Path) -> set[Path]:
    """Our files that `path` imports anywhere in it, at the top or inside a function: a circle
    through a late import is still two files that cannot be read one without the other."""
    package = ".".join(path.relative_to(REPO).with_suffix("").parts)
    if path.name == "__init__.py":
        package = package.rsplit(".", 1)[0]
    found: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[:len(parent) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            # `from a import b` loads a.b when b is a module, else a name of a.
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for name in names:
            target = file_of(name)
            if target is not None and target != path:
                found.add(target)
                break
    return found


def imported_names(path: Path) -> set[str]:
    """Every module name `path` imports, anywhere in it (a late import, one under
    TYPE_CHECKING) or through importlib with a literal name."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add(node.module or "")
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                    "import_module", "__import__"):
            found.add(str(node.args[0].value))
    return found


def harness_imports(root: Path) -> dict[str, list[str]]:
    """File -> the harness modules it imports, for every file under `root`."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        names = sorted(n for n in imported_names(path) if n.split(".")[0] == "experiments")
        if names:
            found[str(path.relative_to(root.parent))] = names
    return found


def test_the_product_never_imports_the_harness_even_late() -> None:
    assert harness_imports(REPO / "treadwise") == {}


def test_the_harness_import_finder_finds_a_late_one(tmp_path: Path) -> None:
    package = tmp_path / "treadwise"
    package.mkdir()
    (package / "a.py").write_text("def f():\n    from experiments.store import open_run\n")
    (package / "b.py").write_text("import importlib\nimportlib.import_module('experiments.cli')\n")
    (package / "c.py").write_text("from treadwise.web import extensions\n")
    assert harness_imports(package) == {"treadwise/a.py": ["experiments.store"],
                                        "treadwise/b.py": ["experiments.cli"]}


def reachable(graph: dict[Path, set[Path]], start: Path) -> set[Path]:
    seen: set[Path] = set()
    todo = list(graph.get(start, ()))
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return seen


def circles(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    """The groups of files that reach each other through imports (each sorted)."""
    reach = {node: reachable(graph, node) for node in graph}
    groups = {frozenset({n} | {m for m in reach[n] if n in reach.get(m, set())})
              for n in graph if n in reach[n]}
    return sorted(sorted(group) for group in groups)


def test_no_two_files_import_each_other_even_through_a_late_import() -> None:
    graph = {path: imports(path) for path in sources()}
    found = [sorted(str(p.relative_to(REPO)) for p in group) for group in circles(graph)]
    assert found == []


def test_the_circle_finder_finds_one() -> None:
    a, b, c = Path("a.py"), Path("b.py"), Path("c.py")
    assert circles({a: {b}, b: {c}, c: set()}) == []
    assert circles({a: {b}, b: {a}, c: {a}}) == [[a, b]]


def test_no_module_is_over_400_lines() -> None:
    over = {str(p.relative_to(REPO)): n for p in sources()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert over == {}


def test_experiments_keeps_at_most_8_files_at_its_top_level() -> None:
    top = [p.name for p in (REPO / "experiments").iterdir()
           if p.is_file() and not p.name.startswith(".")]
    assert len(top) <= 8, top
