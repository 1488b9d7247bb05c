"""End to end: a short soak (`medplay bench soak`, `make soak`) of 60 real cpu-smoke steps, SIGKILLed once and resumed.

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_soak_cpu.py

What cannot be noisy is asserted: the resumed run started from the newest verified checkpoint, the metrics file
lists every step exactly once (the killed run's later records moved to metrics.replayed.jsonl), retention kept
`--keep` whole checkpoints and nothing else grew past them. The memory and time slopes belong to the benchmark
(docs/results/soak-cpu.md), not to a test. `long`: 15 minutes on 2 cores (2026-11-28).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cpu_smoke import MEMORY_FLOOR, train_timeout_s

from medical_team.bench.commands import medplay_here
from medical_team.reliability.checkpoints import damage, has_manifest
from medical_team.run_folder.checkpoint_folder import step_dirs

STEPS, SAVE_FREQ, KEEP = 60, 10, 2  # six saves, two kept: retention has four to delete
# Two starts and a replay: the soak's own run guard (the two starts' hang guards), and room to write the report.
SOAK_TIMEOUT_S = 2 * train_timeout_s(STEPS)

pytestmark = [pytest.mark.e2e, pytest.mark.long, pytest.mark.timeout(SOAK_TIMEOUT_S + 300)]


@pytest.fixture(scope="module")
def soak(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    """One soak with one kill (seed 7: the kill step is fixed), its soak.json and its work folder."""
    root = tmp_path_factory.mktemp("soak")
    work, report = root / "work", root / "report" / "soak"
    command = medplay_here(
        "bench", "soak", "--steps", str(STEPS), "--kills", "1", "--seed", "7",
        "--save-freq", str(SAVE_FREQ), "--keep", str(KEEP), "--warmup-steps", "10",
        "--work", str(work), "--report", str(report),
        "--override", f"{MEMORY_FLOOR}=0",  # off, as in every e2e run but the floors' own (tests/cpu_smoke.py)
    )  # fmt: skip
    result = subprocess.run(command, check=False, capture_output=True, text=True, timeout=SOAK_TIMEOUT_S)
    assert result.returncode == 0, f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return json.loads((report / "soak.json").read_text()), work


def test_the_run_was_killed_once_and_resumed_from_the_newest_verified_checkpoint(soak: tuple[dict, Path]) -> None:
    document, _ = soak
    killed, resumed = document["segments"]
    assert killed["exit_status"] == -9 and killed["killed_after_step"] >= document["settings"]["kill_steps"][0]
    assert killed["checkpoint_at_kill"] is not None and killed["checkpoint_at_kill"] % SAVE_FREQ == 0
    assert resumed["resumed_from"] == killed["checkpoint_at_kill"] and resumed["exit_status"] == 0
    assert document["problems"] == []


def test_every_step_is_in_the_metrics_file_exactly_once(soak: tuple[dict, Path]) -> None:
    document, work = soak
    lines = (work / "checkpoints" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == list(range(1, STEPS + 1))
    killed = document["segments"][0]
    replayed = (work / "checkpoints" / "metrics.replayed.jsonl").read_text().splitlines()
    moved = [json.loads(line)["step"] for line in replayed if line.endswith("}")]  # a line the kill cut: left out
    # the steps after the checkpoint up to the kill (one more when the trainer logged it as the kill was sent)
    assert moved == list(range(killed["checkpoint_at_kill"] + 1, moved[-1] + 1))
    assert killed["killed_after_step"] <= moved[-1] <= killed["killed_after_step"] + 1


def test_retention_keeps_only_whole_checkpoints(soak: tuple[dict, Path]) -> None:
    _, work = soak
    kept = step_dirs(work / "checkpoints")
    assert sorted(kept) == [STEPS - SAVE_FREQ, STEPS]
    for folder in kept.values():
        assert has_manifest(folder) and damage(folder) == [] and (folder / "actor").is_dir()


def test_disk_stays_within_the_retention_bound(soak: tuple[dict, Path]) -> None:
    document, work = soak
    checkpoints = work / "checkpoints"
    one = max(
        sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) for folder in step_dirs(checkpoints).values()
    )
    records = sum(f.stat().st_size for f in checkpoints.rglob("*") if f.is_file() and "global_step_" not in str(f))
    total = sum(f.stat().st_size for f in checkpoints.rglob("*") if f.is_file())
    assert total <= KEEP * one + records
    # the samples saw the checkpoint folder hold at most KEEP + 1 checkpoints at any time (the newest being written)
    peak = max(sample["folders_mib"].get("checkpoints", 0.0) for sample in document["samples"])
    assert peak * 2**20 <= (KEEP + 1) * one + records


def test_the_steps_cpu_seconds_were_read_as_they_were_logged(soak: tuple[dict, Path]) -> None:
    document, _ = soak
    cpu = {int(step): seconds for step, seconds in document["step_cpu_seconds"].items()}
    # read between two consecutive logged steps: most steps have one, each some work of the run's processes
    assert len(cpu) >= STEPS // 2 and all(seconds > 0 for seconds in cpu.values())
    assert set(cpu) <= set(range(2, STEPS + 1))  # never the first step of all: nothing before it to measure from
    assert document["figures"]["cpu_time"]["first_tenth_median_s"] > 0
