"""The disk a run's saves and records will take, against each volume's free space: refused before Ray starts.

One checkpoint is estimated from the policy (hardware/checkpoint_size.py). Retention (reliability/retention.py)
keeps `trainer.max_actor_ckpt_to_keep` (K) checkpoints and removes the oldest only once the next one is committed,
so K + 1 are on disk while the newest is written; with every checkpoint kept, all the run's saves are. The saves
are verl's (every `trainer.save_freq` steps and the last step) over the steps left after the checkpoint a resume
starts from. The records (metrics, game records, logs, TensorBoard) are bounded per step. What checkpoints already
on disk take counts as free where retention will remove them before the peak (husks at the start, older
checkpoints as new ones are committed). A volume that cannot hold its share is refused with every number named.
"""

from __future__ import annotations

import dataclasses
import shutil
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from medical_team.common.errors import UserInputError
from medical_team.hardware.checkpoint_size import MIB, checkpoint_parts, side_files_bytes
from medical_team.hardware.plan_inputs import plan_inputs
from medical_team.models.shape import GIB
from medical_team.reliability.checkpoints import has_weights
from medical_team.reliability.resource_watch import DISK_FLOOR_KEY
from medical_team.reliability.retention import is_finished, keeps_all
from medical_team.run_folder.checkpoint_folder import step_dirs

# Records a step adds beside its game records, bounds over what 400 cpu-smoke steps wrote (16.8 MiB in all): the
# metrics line (~5.5 KB a step, beside the metrics file) and the log's lines and TensorBoard's events (~8 KB and
# ~9.7 KB a step, in the output folder).
METRICS_BYTES_PER_STEP = 8 * 1024
LOG_BYTES_PER_STEP = 24 * 1024
# One game record: the note (at most the prompt cap), the rewrite and the assessor's answer (at most the response
# cap each), ~4 bytes a token as JSON text, and its fields.
GAME_RECORD_BYTES_PER_TOKEN = 4
GAME_RECORD_FIELDS_BYTES = 1024
# What a run writes once: its config, versions, the start of its log (verl prints the whole config).
START_RECORDS_BYTES = 1 * MIB
KEEP_KEY = "trainer.max_actor_ckpt_to_keep"
SAVE_FREQ_KEY = "trainer.save_freq"


@dataclass(frozen=True)
class SavesPlan:
    """How many checkpoints the run saves and keeps, and what they take at the peak."""

    checkpoint_bytes: int  # one checkpoint (estimated)
    parts: dict[str, int]  # its parts (checkpoint_size.checkpoint_parts)
    steps_left: int  # steps this run will train (after the checkpoint it resumes from)
    saves: int  # checkpoints it will save
    save_freq: int  # trainer.save_freq
    at_once: int  # new checkpoints on disk at the peak
    keep: object  # trainer.max_actor_ckpt_to_keep as given
    existing_bytes: int  # step folders on disk now
    reclaimed_bytes: int  # of those, what retention has removed by the peak
    metrics_bytes: int  # the metrics lines and game records of the steps left (beside the metrics file)
    log_bytes: int  # the log and TensorBoard of the steps left, and what the run writes once (the output folder)

    @property
    def checkpoints_bytes(self) -> int:
        """What the checkpoint folder needs beyond what it holds now: the new ones at the peak less the reclaimed."""
        return self.at_once * self.checkpoint_bytes - self.reclaimed_bytes


def config_checkpoint_parts(config: DictConfig) -> dict[str, int]:
    """Bytes of each part of one checkpoint of the run a composed config describes.

    A tiny model the run will build (`medplay.model.build_tiny`) and that is not there yet has the tiny spec's shape.
    """
    model_path = str(config.actor_rollout_ref.model.path)
    inputs = plan_inputs(OmegaConf.to_container(config, resolve=True), None)
    if config.medplay.model.build_tiny and not (Path(model_path) / "config.json").is_file():
        from medical_team.models.tiny import tiny_shape

        inputs = dataclasses.replace(inputs, policy=tiny_shape())
    return checkpoint_parts(
        inputs, list(config.actor_rollout_ref.actor.checkpoint.save_contents), side_files_bytes(model_path)
    )


def folder_bytes(folder: Path) -> int:
    """The bytes of the files under `folder`."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def total_steps(config: DictConfig) -> int:
    """The run's last step: `trainer.total_training_steps`, else verl's count (batches of the train file per epoch)."""
    if config.trainer.total_training_steps is not None:
        return int(config.trainer.total_training_steps)
    import pyarrow.parquet as pq

    rows = pq.ParquetFile(config.data.train_files).metadata.num_rows
    return rows // int(config.data.train_batch_size) * int(config.trainer.total_epochs)


def verl_saves(start: int, last: int, save_freq: int) -> int:
    """How many saves verl makes over steps `start`+1 .. `last`: every `save_freq` steps and at the last step."""
    if save_freq <= 0 or last <= start:
        return 0
    return sum(1 for step in range(start + 1, last + 1) if step % save_freq == 0 or step == last)


def checkpoints_peak(saves: int, keep: object, each: int, existing: list[int], husks: int) -> tuple[int, int]:
    """(new checkpoints on disk at the peak, bytes of the step folders there now that retention has removed by then).

    `each`: one new checkpoint; `existing`: the sizes of the finished checkpoints there now, newest first; `husks`:
    the bytes of folders without weights (removed at the start). At the i-th save, i new checkpoints are on disk
    (i - 1 committed, the i-th being written) beside the newest K - (i - 1) existing ones; the peak is the i that
    needs the most beyond what is there now. Unfinished saves are counted as staying (a resume replaces or removes
    them only later).
    """
    if saves == 0:
        return 0, 0
    if keeps_all(keep):
        return saves, husks
    assert isinstance(keep, int)
    peaks = []
    for new in range(1, min(saves, keep + 1) + 1):
        left = existing if new == 1 else existing[: max(0, keep - (new - 1))]
        reclaimed = husks + sum(existing) - sum(left)
        peaks.append((new * each - reclaimed, new, reclaimed))
    _, new, reclaimed = max(peaks)
    return new, reclaimed


def game_records_bytes(config: DictConfig) -> int:
    """A bound on one step's game records (`medplay.report.games_per_step` games, each at its length caps)."""
    games = int(config.data.train_batch_size) * int(config.actor_rollout_ref.rollout.n)
    recorded = min(int(config.medplay.report.games_per_step), games)
    tokens = int(config.data.max_prompt_length) + 2 * int(config.data.max_response_length)
    return recorded * (tokens * GAME_RECORD_BYTES_PER_TOKEN + GAME_RECORD_FIELDS_BYTES)


def saves_plan(config: DictConfig) -> SavesPlan:
    """What the run a composed config describes will save and record, and what its checkpoint folder holds now."""
    root = Path(config.trainer.default_local_dir)
    parts = config_checkpoint_parts(config)
    last = total_steps(config)
    folders = step_dirs(root)
    finished = sorted((step for step, folder in folders.items() if is_finished(folder)), reverse=True)
    start = next((step for step in finished if step <= last), 0) if config.trainer.resume_mode == "auto" else 0
    save_freq = int(OmegaConf.select(config, SAVE_FREQ_KEY))
    saves = verl_saves(start, last, save_freq)
    sizes = {step: folder_bytes(folder) for step, folder in folders.items()}
    husks = sum(size for step, size in sizes.items() if not has_weights(folders[step]))
    keep = OmegaConf.select(config, KEEP_KEY)
    each = sum(parts.values())
    at_once, reclaimed = checkpoints_peak(saves, keep, each, [sizes[step] for step in finished if step <= start], husks)
    steps_left = max(0, last - start)
    return SavesPlan(
        checkpoint_bytes=each,
        parts=parts,
        steps_left=steps_left,
        saves=saves,
        save_freq=save_freq,
        at_once=at_once,
        keep=keep,
        existing_bytes=sum(sizes.values()),
        reclaimed_bytes=reclaimed,
        metrics_bytes=steps_left * (METRICS_BYTES_PER_STEP + game_records_bytes(config)),
        log_bytes=START_RECORDS_BYTES + steps_left * LOG_BYTES_PER_STEP,
    )


def shown(size: float) -> str:
    """A byte count in MiB or GiB, as the console and the refusal write it."""
    return f"{size / 1024**3:.2f} GiB" if abs(size) >= 1024**3 else f"{size / MIB:.2f} MiB"


def volume_root(path: Path) -> Path:
    """The nearest folder at or above `path` that exists: where its volume is measured."""
    path = path.absolute()
    while not path.exists():
        path = path.parent
    return path


def volume_needs(config: DictConfig, plan: SavesPlan) -> dict[int, tuple[Path, list[tuple[str, int]]]]:
    """What each volume must hold, by device: its first folder and the needs (what, bytes) that go there."""
    needs = [
        (Path(config.trainer.default_local_dir), "checkpoints", plan.checkpoints_bytes),
        (Path(config.medplay.metrics_file).parent, "metrics and game records", plan.metrics_bytes),
        (Path(config.medplay.output_dir), "logs and TensorBoard", plan.log_bytes),
    ]
    volumes: dict[int, tuple[Path, list[tuple[str, int]]]] = {}
    for folder, what, size in needs:
        device = volume_root(folder).stat().st_dev
        volumes.setdefault(device, (folder, []))[1].append((what, size))
    return volumes


def checkpoints_words(plan: SavesPlan) -> str:
    """How the checkpoints' share was reckoned, in words."""
    kept = (
        f"{KEEP_KEY}={shown_value(plan.keep)} keeps every one"
        if keeps_all(plan.keep)
        else f"{KEEP_KEY}={plan.keep} kept and the next one while it is written"
    )
    return (
        f"{plan.at_once} at once x {shown(plan.checkpoint_bytes)} each: {kept}, {plan.saves} saves in "
        f"{plan.steps_left} steps at {SAVE_FREQ_KEY}={plan.save_freq}, less {shown(plan.reclaimed_bytes)} that "
        f"retention removes of the {shown(plan.existing_bytes)} of step folders there now"
    )


def shown_value(value: object) -> str:
    """A setting's value as an override writes it (`null`)."""
    return "null" if value is None else str(value)


def check_disk(config: DictConfig) -> str:
    """Refuse (UserInputError, exit 2) a run whose saves and records a volume cannot hold; else say what they take."""
    plan = saves_plan(config)
    lines = []
    for folder, needs in volume_needs(config, plan).values():
        free = shutil.disk_usage(volume_root(folder)).free
        total = sum(size for _, size in needs)
        parts = [
            f"{what} {shown(size)}" + (f" ({checkpoints_words(plan)})" if what == "checkpoints" else "")
            for what, size in needs
        ]
        if total > free:
            raise UserInputError(
                f"the volume has {shown(free)} free and this run needs {shown(total)} there: {' + '.join(parts)}. "
                "Give the run a larger volume (medplay.output_dir, trainer.default_local_dir), keep fewer "
                "checkpoints (trainer.max_actor_ckpt_to_keep) or save less often (a larger trainer.save_freq)",
                file=str(folder),
            )
        lines.append(f"{shown(total)} of {shown(free)} free in {folder}")
    return f"disk: the saves and records need {'; '.join(lines)} (one checkpoint ~{shown(plan.checkpoint_bytes)})"


def disk_floor(config: DictConfig, floor_gib: float | None) -> dict[str, float]:
    """`medplay.resources.disk_floor_gib` when it is null: one checkpoint as estimated, the stop's own save."""
    if floor_gib is not None:
        return {}
    return {DISK_FLOOR_KEY: round(sum(config_checkpoint_parts(config).values()) / GIB, 3)}
