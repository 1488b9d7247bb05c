"""The package's layers: models -> hardware -> data -> game -> judge -> reliability -> run -> watchdog -> plugin
-> judge_server -> agent_loop -> task_runner -> launcher -> evaluate -> bench -> cli, each importing only layers before
it (models imports none).

Every `import` statement is read from the source (those inside functions too), so a lazy import
that runs back up a layer is caught without running it; `from package import module` counts as importing that module.
`evaluate` stands beside the Ray processes' code and the launcher, not on them: it reads checkpoints through
`medical_team.checkpoint_folder` and `reliability`. `bench` (the benchmarks behind `medplay bench`) starts runs
as a user does, in processes of their own, and reads what they leave. The top-level modules (vocab, errors, console, stack,
checkpoint_folder, judge_kinds, ...) sit below every layer; `models` (real and tiny models prepared offline, and model
shapes) is the lowest layer and `hardware` (probe, memory plan) the next. Which process each folder's code runs in,
and what one process's code may import of another's, is tests/test_worlds.py's. No module takes part in an import
cycle. The shared layers (models, hardware, data, game, judge, reliability, run) import no verl, Ray or vLLM, checked
also by importing all their modules in a fresh interpreter.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import medical_team

PACKAGE = Path(medical_team.__file__).resolve().parent
LAYERS = (
    "models",
    "hardware",
    "data",
    "game",
    "judge",
    "reliability",
    "run",
    "watchdog",
    "plugin",
    "judge_server",
    "agent_loop",
    "task_runner",
    "launcher",
    "evaluate",
    "bench",
    "cli",
)
# Layer -> the medplay layers it may import (top-level modules are open to all).
ALLOWED = {layer: set(LAYERS[:index]) for index, layer in enumerate(LAYERS)}
ALLOWED["evaluate"] -= {"watchdog", "plugin", "judge_server", "agent_loop", "task_runner", "launcher"}
FRAMEWORK_FREE = ("models", "hardware", "data", "game", "judge", "reliability", "run")
FRAMEWORKS = {"verl", "ray", "vllm"}


def imported_modules(path: Path, root: Path = PACKAGE) -> set[str]:
    """Absolute module names imported anywhere in a source file of the package at `root` (relative ones resolved).

    `from package import name` yields both `package` and `package.name`: the latter is the module imported when
    `name` is one (`_known` reduces it to `package` when it is not).
    """
    package = ".".join((root.name, *path.relative_to(root).parent.parts))
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def layer_of(module: str) -> str | None:
    """The layer a `medical_team.<layer>...` module belongs to (None for top-level modules and others)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "medical_team" and len(parts) > 1 and parts[1] in LAYERS else None


def sources(top: str | None = None) -> list[Path]:
    """The package's source files: one layer's, or the top-level modules' when `top` is None."""
    if top is None:
        return sorted(PACKAGE.glob("*.py"))
    return sorted((PACKAGE / top).rglob("*.py"))


def test_every_layer_has_sources() -> None:
    assert all(sources(layer) for layer in LAYERS)
    assert {path.stem for path in sources()} >= {"vocab", "errors", "console", "stack", "checkpoint_folder"}


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_only_the_layers_before_it(layer: str) -> None:
    wrong = {
        f"{path.relative_to(PACKAGE)} imports {module}"
        for path in sources(layer)
        for module in imported_modules(path)
        if (target := layer_of(module)) not in (None, layer) and target not in ALLOWED[layer]
    }
    assert not wrong, sorted(wrong)


def test_top_level_modules_import_no_layer() -> None:
    wrong = {
        f"{path.name} imports {module}" for path in sources() for module in imported_modules(path) if layer_of(module)
    }
    assert not wrong, sorted(wrong)


@pytest.mark.parametrize("layer", FRAMEWORK_FREE)
def test_framework_free_layers_name_no_framework(layer: str) -> None:
    wrong = {
        f"{path.relative_to(PACKAGE)} imports {module}"
        for path in sources(layer)
        for module in imported_modules(path)
        if module.split(".")[0] in FRAMEWORKS
    }
    assert not wrong, sorted(wrong)


def test_framework_free_layers_pull_in_no_framework_when_imported() -> None:
    """Every module of the shared layers imported together loads no verl, Ray or vLLM (nor a process's own code)."""
    modules = [
        ".".join(("medical_team", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
        for layer in FRAMEWORK_FREE
        for path in sources(layer)
    ]
    processes = [["medical_team", layer] for layer in LAYERS if layer not in FRAMEWORK_FREE]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'verl', 'ray', 'vllm'} "
        f"or m.split('.')[:2] in {processes!r}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_no_module_takes_part_in_an_import_cycle() -> None:
    """Every import, lazy ones included, as an edge between the package's modules: the graph has no cycle."""
    assert not import_cycles(PACKAGE), import_cycles(PACKAGE)


def test_the_cycle_check_sees_a_package_import_and_a_lazy_one(tmp_path: Path) -> None:
    """`from package import module` at the top of one module and a relative import inside a function of the other."""
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "first.py").write_text("from pkg import second\nfrom pkg.helpers import VALUE\n")
    (root / "second.py").write_text("def late() -> None:\n    from . import first\n")
    (root / "helpers.py").write_text("VALUE = 1\n")
    assert import_cycles(root) == ["pkg.first -> pkg.second -> pkg.first"]
    (root / "second.py").write_text("def late() -> None:\n    from .helpers import VALUE\n")
    assert import_cycles(root) == []


def import_cycles(root: Path) -> list[str]:
    """The import cycles among the modules of the package at `root`, each as `a -> b -> a`."""
    modules = {".".join((root.name, *path.relative_to(root).with_suffix("").parts)).removesuffix(".__init__"): path
               for path in root.rglob("*.py")}  # fmt: skip
    edges = {
        name: {
            target for module in imported_modules(path, root) if (target := _known(module, modules)) not in (None, name)
        }
        for name, path in modules.items()
    }
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(edges[name]):
            if state.get(target) == 1:
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in sorted(modules):
        if name not in state:
            visit(name, [name])
    return cycles


def _known(module: str, modules: dict[str, Path]) -> str | None:
    """The package module an import names: the longest prefix of `module` that is one (a name's own module)."""
    while module and module not in modules:
        module = module.rpartition(".")[0]
    return module or None
