"""No import cycle anywhere in the tree: the package, scripts/, entrypoints/ and the tests, read from their imports.

Every `import` statement counts, those inside functions too (tests/test_layering.py's `imported_modules`), and each
name is looked up where Python finds it when that file runs: a package's module from the repository root; a script
or a test (a file in a folder without `__init__.py`) first in its own folder (its script's folder, or the one pytest
puts first on the path), then tests/ for a test (pyproject.toml's pytest `pythonpath`), then the repository root.
A name found nowhere in the tree (the standard library, verl, ...) is no edge.
"""

from __future__ import annotations

from pathlib import Path

from test_doc_paths import ROOT, tree_files
from test_layering import imported_modules

TEST_PATH = "tests"  # pyproject.toml's pytest pythonpath


def test_no_module_of_the_tree_takes_part_in_an_import_cycle() -> None:
    """Every import, lazy ones included, as an edge between the tree's files: the graph has no cycle."""
    cycles = import_cycles(ROOT)
    assert not cycles, cycles


def test_the_cycle_check_sees_package_script_and_lazy_imports(tmp_path: Path) -> None:
    """`from package import module` at the top of one module and a relative import inside a function of the other;
    two scripts importing each other by file name, one of them inside a function; a test importing a script is no
    cycle."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "first.py").write_text("from pkg import second\nfrom pkg.helpers import VALUE\n")
    (tmp_path / "pkg" / "second.py").write_text("def late() -> None:\n    from . import first\n")
    (tmp_path / "pkg" / "helpers.py").write_text("VALUE = 1\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "tool.py").write_text("import json\n\nfrom pkg import first\nfrom tool_part import PART\n")
    (tmp_path / "scripts" / "tool_part.py").write_text("PART = 1\n\n\ndef late() -> None:\n    import tool\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_tool.py").write_text("from pkg.helpers import VALUE\n")
    assert import_cycles(tmp_path) == [
        "pkg/first.py -> pkg/second.py -> pkg/first.py",
        "scripts/tool.py -> scripts/tool_part.py -> scripts/tool.py",
    ]
    (tmp_path / "pkg" / "second.py").write_text("def late() -> None:\n    from .helpers import VALUE\n")
    (tmp_path / "scripts" / "tool_part.py").write_text("PART = 1\n")
    assert import_cycles(tmp_path) == []


def import_cycles(root: Path) -> list[str]:
    """The import cycles among the Python files of the tree at `root`, each as `a.py -> b.py -> a.py`."""
    root = root.resolve()
    sources = {path for path in tree_files(root) if path.suffix == ".py"}
    edges = {
        source: {
            target
            for module in imported_modules(source, top_folder(source))
            if (target := module_file(module, search_path(source, root))) in sources - {source}
        }
        for source in sources
    }
    state: dict[Path, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(source: Path, path: list[Path]) -> None:
        state[source] = 1
        for target in sorted(edges[source]):
            if state.get(target) == 1:
                cycle = [*path[path.index(target) :], target]
                cycles.append(" -> ".join(file.relative_to(root).as_posix() for file in cycle))
            elif target not in state:
                visit(target, [*path, target])
        state[source] = 2

    for source in sorted(sources):
        if source not in state:
            visit(source, [source])
    return cycles


def top_folder(source: Path) -> Path:
    """The folder of the top-level package `source` belongs to (relative imports start there), else its own."""
    folder = source.parent
    while (folder.parent / "__init__.py").is_file():
        folder = folder.parent
    return folder


def search_path(source: Path, root: Path) -> list[Path]:
    """Where the imports of `source` are looked up, first to last."""
    if (source.parent / "__init__.py").is_file():
        return [root]
    tests = root / TEST_PATH
    return [source.parent, *([tests] if source.is_relative_to(tests) else []), root]


def module_file(module: str, folders: list[Path]) -> Path | None:
    """The file of the tree `module` is read from: its own, or for `package.name` where `name` is no module (a
    function, a class), the package's; None when it is no module of the tree."""
    parts = module.split(".")
    for folder in folders:
        for end in range(len(parts), 0, -1):
            base = folder.joinpath(*parts[:end])
            for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                if candidate.is_file():
                    return candidate.resolve()  # a linked folder's file as its own (medical_team/configs)
    return None
