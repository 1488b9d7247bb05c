"""`medplay bench`: one subcommand per benchmark of medical_team/bench/, each with its `--help`, and no heavy import
for any `--help` (a benchmark's module loads only when a command line names it; numpy, torch and verl when it runs).

Run: PYTHONPATH=$PWD:tests .venv/bin/python -m pytest -q tests/cli/test_bench.py
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import medical_team.bench
from medical_team.cli import main
from medical_team.cli.bench import BENCHES

BENCH = Path(medical_team.bench.__file__).resolve().parent
HEAVY = ("numpy", "torch", "verl", "ray", "vllm", "transformers")


def defines(path: Path) -> set[str]:
    """The names of the functions a module defines at its top level."""
    return {node.name for node in ast.parse(path.read_text()).body if isinstance(node, ast.FunctionDef)}


def test_every_benchmark_module_with_a_command_line_is_a_subcommand() -> None:
    commands = {f"medical_team.bench.{path.stem}" for path in BENCH.glob("*.py") if "run" in defines(path)}
    assert commands == {module for module, _ in BENCHES.values()}
    assert all({"add_arguments", "run"} <= defines(BENCH / f"{module.rpartition('.')[2]}.py") for module in commands)


def test_bench_help_lists_every_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_status:
        main(["bench", "--help"])
    assert exit_status.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: medplay bench") and all(name in out for name in BENCHES)


@pytest.mark.parametrize("name", sorted(BENCHES))
def test_each_benchmark_says_what_it_does_and_its_options(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_status:
        main(["bench", name, "--help"])
    assert exit_status.value.code == 0
    usage, description, *rest = capsys.readouterr().out.split("\n\n")
    help_text = BENCHES[name][1]
    assert usage.startswith(f"usage: medplay bench {name}")
    assert description.strip() == f"{help_text[0].upper()}{help_text[1:]}."
    assert "--help" in rest[-1]


def test_no_help_imports_numpy_torch_or_verl() -> None:
    """`medplay bench --help` and every benchmark's `--help`, each in a fresh interpreter as the command runs."""
    code = (
        "import contextlib, io, sys\n"
        "from medical_team.cli import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(sys.argv[1:])\n"
        f"print(sorted(name for name in {HEAVY!r} if name in sys.modules))\n"
    )
    for argv in (["bench", "--help"], *(["bench", name, "--help"] for name in BENCHES)):
        done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip().splitlines()[-1] == "[]", (argv, done.stdout)


def test_an_unknown_benchmark_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_status:
        main(["bench", "nothing"])
    assert exit_status.value.code == 2 and "invalid choice: 'nothing'" in capsys.readouterr().err
