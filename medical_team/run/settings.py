"""The schema of the `medplay:` config section: types, ranges and cross-field rules in one place.

`settings_from_trainer_config` binds the section once per process (medical_team/common/schema.py): every
problem at once, each naming the key, the value and what is expected. The values, with a comment
each, live in configs/medplay.yaml; adding a setting touches this schema and the YAML only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from medical_team.common.errors import UserInputError
from medical_team.common.schema import Rules, above, at_least, bind, check
from medical_team.common.vocab import Category, Role
from medical_team.game import GameConfig, RewardConfig
from medical_team.game.alarm import ALARMS, AlarmAction, AlarmRule, alarm_rules
from medical_team.hardware.profiles import HardwareSettings
from medical_team.judge.settings import JudgeSettings
from medical_team.reliability.resource_watch import RAY_KILL_USED_FRACTION


class TrainingMode(str, Enum):
    """Which role's samples update the policy."""

    JOINT = "joint"
    ASSESSOR = "assessor"
    ATTACKER = "attacker"

    def trains(self, role: Role) -> bool:
        """True when samples of `role` update the policy in this mode."""
        return self is TrainingMode.JOINT or self.value == role.value


class WandbMode(str, Enum):
    """Where wandb sends a run when `wandb` is in `trainer.logger` (its WANDB_MODE)."""

    ONLINE = "online"  # to the wandb server, with WANDB_API_KEY from the environment
    OFFLINE = "offline"  # into <medplay.output_dir>/wandb, for `wandb sync` later
    DISABLED = "disabled"


def _path(what: str = "a path") -> Any:
    """A field holding a non-empty string."""
    return check(bool, f"{what} (a non-empty string)")


@dataclass(frozen=True)
class ProbeSettings:
    """The learning probe (medical_team/run/learning_probe.py): off in every real run."""

    enabled: bool  # each role's game reward is replaced by the probe reward
    inverted: bool  # each role is rewarded for not showing its behaviour (the control run)


# `medplay.monitors.alarms`: one threshold (or null: off) per alarm of game/alarm.py.
Alarms = dataclasses.make_dataclass(
    "Alarms", [(name, float | None, at_least(0, "a number")) for name in ALARMS], frozen=True
)


@dataclass(frozen=True)
class MonitorSettings:
    """The collapse monitors' alarm (medical_team/game/monitors.py, medical_team/game/alarm.py)."""

    patience: int = at_least(1)  # steps in a row past a threshold before it fires
    action: AlarmAction  # warn: a console line; stop: the line, a checkpoint, the end of the run
    self_bleu_max_rewrites: int = at_least(2)  # most rewrites one Self-BLEU compares
    alarms: Alarms

    @property
    def rules(self) -> list[AlarmRule]:
        """The alarms whose threshold is set."""
        return alarm_rules(dataclasses.asdict(self.alarms))


@dataclass(frozen=True)
class GuardSettings:
    """`medplay.guards`: when a run stops itself."""

    max_non_finite_steps: int = at_least(1)


def _memory_floor(value: float) -> bool:
    """0 (no floor), or a share of host memory above what Ray's memory monitor leaves before it kills a worker."""
    return value == 0 or 1 - RAY_KILL_USED_FRACTION < value <= 1


@dataclass(frozen=True)
class ResourceSettings:
    """`medplay.resources`: the floors at which a run saves a checkpoint and stops, and the trend's window."""

    host_memory_floor: float = check(
        _memory_floor,
        f"0 (no floor) or a share of host memory above {1 - RAY_KILL_USED_FRACTION:.2f} (below it Ray's memory "
        "monitor kills a worker first) and at most 1",
    )
    disk_floor_gib: float | None = at_least(0, "a number of GiB")  # 0: no floor; None: one checkpoint (the run plan)
    trend_steps: int = at_least(2)


@dataclass(frozen=True)
class WatchdogSettings:
    """`medplay.watchdog`: when a phase that does not end is a stall, and how often the run restarts (watchdog/)."""

    enabled: bool  # false: `medplay train` runs the trainer in its own process, unwatched and never restarted
    k: float = above(1, "a factor")  # a phase is a stall past k x its rolling median (or `floor_s`, the larger)
    floor_s: float = above(0, "a number of seconds")
    startup_s: float = above(0, "a number of seconds")  # the limit of an attempt's start-up
    first_steps: int = at_least(0)  # steps of each attempt with the fixed limit `first_steps_s`, before any median
    first_steps_s: float = above(0, "a number of seconds")
    max_restarts: int = at_least(0)  # restarts in a row that do not advance the verified step; 0: never restart
    poll_s: float = above(0, "a number of seconds")
    kill_grace_s: float = at_least(0, "a number of seconds")  # from SIGTERM to SIGKILL when a stalled run is stopped


@dataclass(frozen=True)
class ReportSettings:
    """`medplay.report`: what the trainer keeps for `medplay report`'s page."""

    games_per_step: int = at_least(0)  # games recorded per step with their texts (game/game_records.py); 0: none


@dataclass(frozen=True)
class ModelSettings:
    """`medplay.model`: the policy."""

    path: str = _path("a folder or hub id")
    build_tiny: bool


@dataclass(frozen=True)
class SelfPlaySettings(Rules):
    """The whole `medplay:` section: the run around the game, and how the agent loop plays and rewards games."""

    output_dir: str = _path()
    data_dir: str = _path()
    metrics_file: str = _path()
    validation_dir: str = _path()
    report: ReportSettings
    training_mode: TrainingMode
    adversarial_games: bool  # False plays every row as a vanilla game (assessor only)
    seeded_sampling: bool  # a seed per generation request and rows in data-row order: runs that repeat themselves
    stop_grace_s: float = above(0, "a number of seconds")
    wandb_mode: WandbMode  # read by wandb in every process as WANDB_MODE (configs/medplay.yaml's env_vars)
    trust_unverified_checkpoints: bool  # resume from a checkpoint without a manifest (its pickles run as code)
    cache_dir: str | None = _path("a folder")
    emulate_gpu_gib: float | None = above(0, "a number of GiB")
    hardware: HardwareSettings  # what the profile needs of the machine (configs/profile/NAME.yaml)
    guards: GuardSettings
    resources: ResourceSettings
    watchdog: WatchdogSettings
    model: ModelSettings
    judge: JudgeSettings
    rewards: RewardConfig
    monitors: MonitorSettings
    learning_probe: ProbeSettings

    @staticmethod
    def problems(values: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
        """Attacker training needs adversarial games."""
        if values.get("training_mode") is TrainingMode.ATTACKER and values.get("adversarial_games") is False:
            yield "adversarial_games", "false leaves training_mode attacker nothing to train on"

    @property
    def game(self) -> GameConfig:
        """The game's settings (the benign mode comes from each data row)."""
        return GameConfig(rewards=self.rewards)

    def played_category(self, category: Category) -> Category:
        """The category a row is played as.

        `attacker` mode plays every row adversarially (a vanilla game would give it nothing to
        train on); `adversarial_games: false` plays every row as a vanilla game.
        """
        if self.training_mode is TrainingMode.ATTACKER:
            return Category.of(category.seed_label, adversarial=True)
        if not self.adversarial_games:
            return Category.of(category.seed_label, adversarial=False)
        return category


def selfplay_settings(section: Mapping[str, Any] | None, other_problems: Sequence[str] = ()) -> SelfPlaySettings:
    """Bind the `medplay:` section; raises UserInputError listing every problem (`other_problems` first)."""
    if section is None:
        raise UserInputError("the training config has no `medplay:` section", field="medplay")
    return bind(SelfPlaySettings, section, "medplay", "invalid training config", other_problems)


def settings_from_trainer_config(config: Any, other_problems: Sequence[str] = ()) -> SelfPlaySettings:
    """SelfPlaySettings from verl's whole trainer config (a DictConfig with a `medplay:` section)."""
    from omegaconf import OmegaConf

    section = config.get("medplay") if hasattr(config, "get") else None
    return selfplay_settings(None if section is None else OmegaConf.to_container(section, resolve=True), other_problems)
