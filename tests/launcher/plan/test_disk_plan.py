"""The disk plan: what a run's saves and records take against each volume, and `medplay train` refused at its start.

Run: PYTHONPATH=tests .venv/bin/python -m pytest -q tests/launcher/plan/test_disk_plan.py

The arithmetic over real checkpoint folders, then a real `medplay train profile=cpu-smoke` whose output folder is a
tmpfs of 4 MiB in a private mount namespace (tests/tiny_filesystem.py): three saves of the tiny model do not fit,
so it exits 2 before Ray starts, naming every figure.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from cpu_smoke import MEDPLAY, convert, train_timeout_s
from omegaconf import DictConfig
from tiny_filesystem import on_tiny_filesystem, tiny_filesystem_unavailable

from medical_team.common.errors import UserInputError
from medical_team.launcher.config.compose import compose_config
from medical_team.launcher.plan.disk_plan import (
    checkpoints_peak,
    config_checkpoint_parts,
    saves_plan,
    shown,
    total_steps,
    verl_saves,
)
from medical_team.reliability.checkpoints import mark_complete
from medical_team.run_folder.checkpoint_folder import TRACKER_NAME

MIB = 1024**2
TINY_FS = "4m"  # the tiny model (0.6 MiB) and the run's log fit; three checkpoints of 2.3 MiB do not


def run_config(root: Path, model: Path, *overrides: str) -> DictConfig:
    """cpu-smoke's composed config with its output in `root` and the tiny model at `model`."""
    return compose_config(
        [
            "profile=cpu-smoke",
            f"medplay.output_dir={root}",
            f"medplay.data_dir={root / 'data'}",
            f"medplay.model.path={model}",
            *overrides,
        ]
    )


def checkpoint(root: Path, step: int, size: int, *, weights: bool = True) -> None:
    """A finished, committed step folder of about `size` bytes (no weights: a husk of the same size)."""
    folder = root / f"global_step_{step}"
    (folder / "actor").mkdir(parents=True)
    (folder / "actor" / "model_world_size_1_rank_0.pt").write_bytes(b"\0" * size)
    (folder / "data.pt").write_bytes(b"loader")
    (root / TRACKER_NAME).write_text(str(step))
    mark_complete(folder, step)
    if not weights:
        shutil.rmtree(folder / "actor")


@pytest.mark.parametrize(
    ("start", "last", "save_freq", "saves"),
    [(0, 3, 1, 3), (0, 10, 4, 3), (4, 10, 4, 2), (10, 10, 1, 0), (0, 10, -1, 0), (0, 10, 0, 0), (0, 8, 4, 2)],
)
def test_saves_are_verls_every_save_freq_steps_and_the_last(start: int, last: int, save_freq: int, saves: int) -> None:
    assert verl_saves(start, last, save_freq) == saves


def test_the_peak_is_k_plus_one_new_checkpoints_less_what_retention_removed() -> None:
    each = 10
    assert checkpoints_peak(100, 2, each, [], 0) == (3, 0)  # K kept and the next one written
    assert checkpoints_peak(2, 2, each, [], 0) == (2, 0)  # fewer saves than that
    assert checkpoints_peak(100, None, each, [9, 9], 5) == (100, 5)  # keep every one: all saves; husks go at start
    assert checkpoints_peak(0, 2, each, [9], 0) == (0, 0)
    # two existing checkpoints of 30 bytes, K=2: the first save is written beside both, the third once both are gone
    assert checkpoints_peak(100, 2, each, [30, 30], 4) == (1, 4)
    assert checkpoints_peak(100, 2, each, [1, 1], 0) == (3, 2)


def test_a_resumed_run_counts_its_steps_left_and_what_retention_frees(tmp_path: Path, tiny_model_dir: Path) -> None:
    checkpoints = tmp_path / "checkpoints"
    checkpoint(checkpoints, 2, MIB // 10, weights=False)  # a husk: removed at the start
    for step in (4, 6):
        checkpoint(checkpoints, step, MIB // 10)  # smaller than a new one: the peak comes once both are gone
    config = run_config(tmp_path, tiny_model_dir, "trainer.total_training_steps=12", "trainer.save_freq=2")
    plan = saves_plan(config)
    assert (plan.steps_left, plan.saves, plan.keep, plan.at_once) == (6, 3, 2, 3)
    # at the third save both old ones are gone: 3 new checkpoints less the husk and the two old ones
    assert plan.reclaimed_bytes == sum(f.stat().st_size for f in checkpoints.glob("global_step_*/**/*") if f.is_file())
    assert plan.checkpoints_bytes == 3 * plan.checkpoint_bytes - plan.reclaimed_bytes
    fresh = saves_plan(
        run_config(tmp_path, tiny_model_dir, "trainer.total_training_steps=12", "trainer.resume_mode=disable")
    )
    husk = sum(f.stat().st_size for f in (checkpoints / "global_step_2").rglob("*") if f.is_file())
    assert (fresh.steps_left, fresh.saves, fresh.reclaimed_bytes) == (12, 12, husk)  # only the husk goes


def test_the_steps_of_a_run_without_a_step_cap_are_verls_batches_per_epoch(
    tmp_path: Path, tiny_model_dir: Path
) -> None:
    convert(tmp_path / "data")
    config = run_config(tmp_path, tiny_model_dir, "trainer.total_training_steps=null", "trainer.total_epochs=2")
    import pyarrow.parquet as pq

    rows = pq.ParquetFile(config.data.train_files).metadata.num_rows
    assert total_steps(config) == rows // config.data.train_batch_size * 2 > 0


def test_the_tiny_model_not_built_yet_is_sized_by_its_spec(tmp_path: Path, tiny_model_dir: Path) -> None:
    built = config_checkpoint_parts(run_config(tmp_path, tiny_model_dir))
    planned = config_checkpoint_parts(run_config(tmp_path, tmp_path / "not-built-yet"))
    assert {name: planned[name] for name in ("model", "optimizer", "hf_model")} == {
        name: built[name] for name in ("model", "optimizer", "hf_model")
    }


def test_a_volume_too_small_for_the_saves_is_refused_with_every_figure(tmp_path: Path) -> None:
    if reason := tiny_filesystem_unavailable():
        pytest.skip(reason)
    convert(tmp_path / "data")
    mount, copy = tmp_path / "out", tmp_path / "out-copy"
    command = [
        "timeout",
        str(train_timeout_s(3)),
        MEDPLAY,
        "train",
        "profile=cpu-smoke",
        f"medplay.output_dir={mount}",
        f"medplay.data_dir={tmp_path / 'data'}",
        "trainer.total_training_steps=3",
    ]
    done = subprocess.run(
        on_tiny_filesystem(TINY_FS, mount, copy, command), capture_output=True, text=True, timeout=900, check=False
    )
    console = done.stdout + done.stderr
    assert done.returncode == 2, console[-4000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"medplay train: error: {mount / 'checkpoints'}: the volume has "), last
    one = sum(config_checkpoint_parts(run_config(copy, copy / "tiny-qwen3")).values())
    for words in (
        "free and this run needs ",
        (
            f" there: checkpoints {shown(3 * one)} (3 at once x {shown(one)} each: trainer.max_actor_ckpt_to_keep=2 "
            "kept and the next one while it is written, 3 saves in 3 steps at trainer.save_freq=1, less 0.00 MiB "
            "that retention removes of the 0.00 MiB of step folders there now)"
        ),
        " + metrics and game records ",
        " + logs and TensorBoard ",
        (
            "Give the run a larger volume (medplay.output_dir, trainer.default_local_dir), keep fewer checkpoints "
            "(trainer.max_actor_ckpt_to_keep) or save less often (a larger trainer.save_freq)"
        ),
    ):
        assert words in last, (words, last)
    assert "Ray" not in console  # refused before Ray (and the judge) started
    assert not (copy / "checkpoints").exists()


def test_the_refusal_is_a_user_input_error_naming_the_folder(tmp_path: Path, tiny_model_dir: Path) -> None:
    from medical_team.launcher.plan.disk_plan import check_disk

    huge = run_config(
        tmp_path, tiny_model_dir, "trainer.total_training_steps=100000000", "trainer.max_actor_ckpt_to_keep=null"
    )
    with pytest.raises(UserInputError) as refused:
        check_disk(huge)
    assert refused.value.file == str(tmp_path / "checkpoints")
    assert "trainer.max_actor_ckpt_to_keep=null keeps every one, 100000000 saves in 100000000 steps" in str(
        refused.value
    )
    assert check_disk(run_config(tmp_path, tiny_model_dir)).startswith("disk: the saves and records need ")
