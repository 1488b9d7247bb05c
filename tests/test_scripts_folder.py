"""scripts/ holds what is not the product (the GPU kit, the wheelhouse builder, experiment shell scripts), each file
short enough to read whole: one that grows past the limit is split by what it does, as gpu_kit_*.py and
wheelhouse_*.py are."""

from __future__ import annotations

from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
MAX_LINES = 350


def test_every_script_is_at_most_350_lines() -> None:
    lengths = {path.name: len(path.read_text().splitlines()) for path in SCRIPTS.iterdir() if path.is_file()}
    assert lengths, SCRIPTS
    assert {name: length for name, length in lengths.items() if length > MAX_LINES} == {}


def test_no_benchmark_lives_in_scripts() -> None:
    # The benchmarks are the product's (`medplay bench`, medical_team/bench/), run in the image as on a checkout.
    assert not [path.name for path in SCRIPTS.iterdir() if path.name.startswith(("bench", "soak"))]
