"""The package's layers: hardware -> data -> game -> judge -> models -> verl_ext -> launcher -> evaluate -> cli, each
importing only layers before it.

Every `import` statement is read from the source (those inside functions too), so a lazy import
that runs back up a layer is caught without running it. `evaluate` stands beside `verl_ext`, not on
it: it reads checkpoints through `medical_team.checkpoint_folder`. The top-level modules (vocab,
errors, console, stack, checkpoint_folder, judge_kinds, ...) sit below every layer; `hardware` (probe, memory plan,
card emulation) is the lowest layer, `models` (real and tiny models prepared offline) sits below verl_ext. `verl_ext`
holds what verl loads in its Ray workers; `launcher` (the `medplay train` process around them) sits above it, so no
in-worker plugin imports launcher code. No module
takes part in an import cycle. `data`, `game` and `judge`
import no verl, Ray or vLLM, checked also by importing all their modules in a fresh interpreter.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import medical_team

PACKAGE = Path(medical_team.__file__).resolve().parent
LAYERS = ("hardware", "data", "game", "judge", "models", "verl_ext", "launcher", "evaluate", "cli")
# Layer -> the medplay layers it may import (top-level modules are open to all).
ALLOWED = {layer: set(LAYERS[:index]) for index, layer in enumerate(LAYERS)}
ALLOWED["evaluate"] -= {"verl_ext", "launcher"}
FRAMEWORK_FREE = ("data", "game", "judge")
FRAMEWORKS = {"verl", "ray", "vllm"}


def imported_modules(path: Path) -> set[str]:
    """Absolute module names imported anywhere in a source file (relative imports are resolved)."""
    package = ".".join(("medical_team", *path.relative_to(PACKAGE).parent.parts))
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                names.add(f"{base}.{node.module}" if node.module else base)
            elif node.module:
                names.add(node.module)
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
    """Every module of data, game and judge imported together loads no verl, Ray or vLLM (nor a higher layer)."""
    modules = [
        ".".join(("medical_team", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
        for layer in FRAMEWORK_FREE
        for path in sources(layer)
    ]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'verl', 'ray', 'vllm'} "
        "or m.startswith(('medical_team.verl_ext', 'medical_team.launcher', 'medical_team.evaluate', 'medical_team.cli'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_no_module_takes_part_in_an_import_cycle() -> None:
    """Every import, lazy ones included, as an edge between the package's modules: the graph has no cycle."""
    modules = {".".join(("medical_team", *path.relative_to(PACKAGE).with_suffix("").parts)): path
               for path in PACKAGE.rglob("*.py")}  # fmt: skip
    modules = {name.removesuffix(".__init__"): path for name, path in modules.items()}
    edges = {
        name: {target for module in imported_modules(path) if (target := _known(module, modules)) not in (None, name)}
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
    assert not cycles, cycles


def _known(module: str, modules: dict[str, Path]) -> str | None:
    """The package module an import names (`from pkg import mod` names pkg.mod when that is a module)."""
    while module and module not in modules:
        module = module.rpartition(".")[0]
    return module or None
