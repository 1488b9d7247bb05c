"""The package's layers: common -> models -> caches -> hardware -> data -> game -> judge -> run_folder -> reliability
-> run -> watchdog -> plugin -> judge_server -> agent_loop -> task_runner -> launcher -> evaluate -> bench -> cli, each
importing only layers before it (common imports none).

Every `import` statement is read from the source (those inside functions too), so a lazy import
that runs back up a layer is caught without running it; `from package import module` counts as importing that module.
`evaluate` stands beside the Ray processes' code and the launcher, not on them: it reads checkpoints through
`medical_team.run_folder` and `reliability`. `bench` (the benchmarks behind `medplay bench`) starts runs
as a user does, in processes of their own, and reads what they leave. The package's root holds its packages and its
face (`__init__.py`) only; `common` (errors, the config schema, the game's vocabulary) sits below every layer, `models`
(real and tiny models prepared offline, and model shapes) is the next, then `caches` (the compilation caches' folder)
and `hardware` (probe, memory plan). Which process each folder's code runs in, and what one process's code may import
of another's, is tests/test_worlds.py's; that no module anywhere in the tree
takes part in an import cycle, tests/test_import_cycles.py's. The shared layers (common, models,
caches, hardware, data, game, judge, run_folder, reliability, run) import no verl, Ray or vLLM, checked also by
importing all their modules in a fresh interpreter.
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
    "common",
    "models",
    "caches",
    "hardware",
    "data",
    "game",
    "judge",
    "run_folder",
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
# Layer -> the medplay layers it may import.
ALLOWED = {layer: set(LAYERS[:index]) for index, layer in enumerate(LAYERS)}
ALLOWED["evaluate"] -= {"watchdog", "plugin", "judge_server", "agent_loop", "task_runner", "launcher"}
FRAMEWORK_FREE = ("common", "models", "caches", "hardware", "data", "game", "judge", "run_folder", "reliability", "run")
FRAMEWORKS = {"verl", "ray", "vllm"}


def imported_modules(path: Path, root: Path = PACKAGE) -> set[str]:
    """Absolute module names imported anywhere in a source file of the package at `root` (relative ones resolved).

    `from package import name` yields both `package` and `package.name`: the latter is the module imported when
    `name` is one (tests/test_import_cycles.py's `module_file` reduces it to `package` when it is not).
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
    """The layer a `medical_team.<layer>...` module belongs to (None for the package's face and others)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "medical_team" and len(parts) > 1 and parts[1] in LAYERS else None


def sources(top: str | None = None) -> list[Path]:
    """The package's source files: one layer's, or those at its root (its face) when `top` is None."""
    if top is None:
        return sorted(PACKAGE.glob("*.py"))
    return sorted((PACKAGE / top).rglob("*.py"))


def test_every_layer_has_sources() -> None:
    assert all(sources(layer) for layer in LAYERS)
    assert [path.name for path in sources()] == ["__init__.py"]  # the root holds packages and its face


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
