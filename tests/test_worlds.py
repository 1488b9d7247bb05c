"""The tree names the process: each folder of medical_team/ is one process's code (a world) or the shared layer.

    .venv/bin/python -m pytest -q tests/test_worlds.py

A world's modules import their own world's and the shared layer's (which imports neither verl, Ray nor vLLM), and
of another world only the module through which they start it (ENTRY_POINTS: the Ray actor class they hand to Ray,
the module `python -m` runs). Imports are read from the source as tests/test_layering.py reads them (those inside
functions too, `from package import module` as that module). docs/architecture.md draws the processes and has the
table of worlds and folders.
"""

from __future__ import annotations

from pathlib import Path

from test_layering import PACKAGE, imported_modules

# Folder of medical_team/ -> the process its code runs in.
WORLDS = {
    "cli": "launcher",  # the `medplay` process
    "launcher": "launcher",
    "evaluate": "launcher",
    "bench": "launcher",  # `medplay bench`: the benchmarks start their runs as processes of their own
    "task_runner": "task runner",  # verl's TaskRunner Ray actor
    "agent_loop": "agent-loop workers",  # verl's agent-loop worker Ray actors (and its reward-loop workers)
    "plugin": "every Ray process",  # VERL_USE_EXTERNAL_MODULES
    "judge_server": "judge server",  # `medplay judge serve`, and the served vLLM judge's process
    "watchdog": "watchdog",  # `medplay train` watching the run it starts in a child
}
# Folders any world may import: they import no verl, Ray or vLLM (tests/test_layering.py).
SHARED_FOLDERS = (
    "common", "models", "caches", "hardware", "data", "game", "judge", "run_folder", "reliability", "run", "configs",
)  # fmt: skip
SHARED = "shared layer"
# Module of one world -> the worlds that import it to start it.
ENTRY_POINTS = {
    "medical_team.task_runner.actor": {"launcher"},  # SelfPlayTaskRunner, the task runner's Ray actor
    "medical_team.agent_loop.worker": {"task runner"},  # SelfPlayAgentLoopWorker, started by the agent-loop manager
    "medical_team.judge_server.app": {"launcher"},  # `medplay judge serve` turns the CLI process into the server
    "medical_team.judge_server.serving": {"launcher"},
    "medical_team.judge_server.served_judge_exec": {"launcher"},  # run with `python -m` as the served judge's process
    "medical_team.watchdog.supervisor": {"launcher"},  # `medplay train` turns into the watchdog of its run
}


def world_of(module: str, worlds: dict[str, str] = WORLDS) -> str:
    """The world of a module of the package (`package.folder...`): its folder's, or the shared layer's."""
    parts = module.split(".")
    return worlds.get(parts[1], SHARED) if len(parts) > 1 else SHARED


def package_modules(root: Path) -> dict[str, Path]:
    """Every module of the package at `root` by its dotted name (a package by its own name)."""
    return {
        ".".join((root.name, *path.relative_to(root).with_suffix("").parts)).removesuffix(".__init__"): path
        for path in root.rglob("*.py")
    }


def imports_of(path: Path, root: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules a source file imports; a package only where none of its modules is named with it."""
    named = {module for module in imported_modules(path, root) if module in modules}
    return {module for module in named if not any(other.startswith(f"{module}.") for other in named)}


def crossings(root: Path, worlds: dict[str, str], entry_points: dict[str, set[str]]) -> list[str]:
    """Each import of a module of another world that is not an entry point of it for the importing world."""
    modules = package_modules(root)
    found = []
    for name, path in sorted(modules.items()):
        here = world_of(name, worlds)
        for imported in sorted(imports_of(path, root, modules)):
            there = world_of(imported, worlds)
            if there in (here, SHARED) or here in entry_points.get(imported, set()):
                continue
            found.append(f"{path.relative_to(root)} ({here}) imports {imported} ({there})")
    return found


def test_every_folder_of_the_package_is_a_world_or_shared() -> None:
    folders = {path.name for path in PACKAGE.iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert folders == set(WORLDS) | set(SHARED_FOLDERS), sorted(folders ^ (set(WORLDS) | set(SHARED_FOLDERS)))
    assert set(WORLDS.values()) == {
        "launcher", "task runner", "agent-loop workers", "every Ray process", "judge server", "watchdog",
    }  # fmt: skip


def test_every_entry_point_is_a_module_of_another_world() -> None:
    modules = package_modules(PACKAGE)
    for entry, importers in ENTRY_POINTS.items():
        assert entry in modules, entry
        assert world_of(entry) not in (SHARED, *importers), entry


def test_no_module_imports_another_worlds_code_but_its_entry_points() -> None:
    """Nor does the shared layer import any world's code (a crossing too: its world is none of theirs)."""
    assert not crossings(PACKAGE, WORLDS, ENTRY_POINTS), crossings(PACKAGE, WORLDS, ENTRY_POINTS)


def test_the_check_sees_a_crossing_a_lazy_one_and_lets_an_entry_point_through(tmp_path: Path) -> None:
    """A worker importing the launcher at the top, the launcher and the shared layer importing a worker inside a
    function, and the launcher importing a worker's entry point."""
    root = tmp_path / "pkg"
    for folder in ("launcher", "worker", "shared"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "shared" / "names.py").write_text("NAME = 1\n\n\ndef late():\n    from pkg.worker import loop\n")
    (root / "worker" / "actor.py").write_text("from pkg.shared.names import NAME\n")
    (root / "worker" / "loop.py").write_text("from pkg.launcher import console\n")
    (root / "launcher" / "console.py").write_text(
        "from pkg.worker import actor\n\n\ndef late():\n    from . import run\n"
    )
    (root / "launcher" / "run.py").write_text("def start():\n    from ..worker.loop import run\n")
    worlds = {"launcher": "launcher", "worker": "worker"}
    assert crossings(root, worlds, {"pkg.worker.actor": {"launcher"}}) == [
        "launcher/run.py (launcher) imports pkg.worker.loop (worker)",
        "shared/names.py (shared layer) imports pkg.worker.loop (worker)",
        "worker/loop.py (worker) imports pkg.launcher.console (launcher)",
    ]
    assert len(crossings(root, worlds, {})) == 4  # the entry point too, once it is not one
