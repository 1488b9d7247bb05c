"""The `medplay:` section of the training config, validated once into frozen dataclasses.

Every problem is reported at once, each naming the key, the value, and what is allowed.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from medical_team.errors import UserInputError
from medical_team.game import GameConfig, RewardConfig, RewardScheme
from medical_team.game.alarm import ALARMS, AlarmAction, AlarmRule, alarm_rules
from medical_team.judge.settings import JUDGE_BACKENDS, JudgeSettings, ServeSettings
from medical_team.vocab import Category, Role


class TrainingMode(str, Enum):
    """Which role's samples update the policy."""

    JOINT = "joint"
    ASSESSOR = "assessor"
    ATTACKER = "attacker"

    def trains(self, role: Role) -> bool:
        """True when samples of `role` update the policy in this mode."""
        return self is TrainingMode.JOINT or self.value == role.value


@dataclass(frozen=True)
class ProbeSettings:
    """The learning probe (medical_team/verl_ext/learning_probe.py): off in every real run."""

    enabled: bool = False  # each role's game reward is replaced by the probe reward
    inverted: bool = False  # each role is rewarded for not showing its behaviour (the control run)


@dataclass(frozen=True)
class MonitorSettings:
    """The collapse monitors' alarm (medical_team/game/monitors.py, alarm.py)."""

    patience: int  # steps in a row a monitor must stay past its threshold before its alarm fires
    action: AlarmAction  # warn: a console line; stop: the line, a checkpoint, the end of the run
    self_bleu_max_rewrites: int  # most rewrites one step's Self-BLEU compares
    alarms: tuple[tuple[str, float | None], ...]  # (name, threshold or None), every alarm of game/alarm.py

    @property
    def rules(self) -> list[AlarmRule]:
        """The alarms whose threshold is set."""
        return alarm_rules(dict(self.alarms))


@dataclass(frozen=True)
class SelfPlaySettings:
    """How the self-play agent loop plays and rewards games."""

    training_mode: TrainingMode
    adversarial_games: bool  # False plays every row as a vanilla game (assessor only)
    game: GameConfig
    judge: JudgeSettings
    probe: ProbeSettings
    monitors: MonitorSettings

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


_TOP_KEYS = {"training_mode", "adversarial_games", "rewards", "judge"}
# Keys of `medplay:` that other parts of the product read (the launcher, reliability): checked here for
# spelling and type, so a typo never passes silently.
_PATH_KEYS = {"output_dir", "data_dir", "metrics_file"}
_RUN_KEYS = _PATH_KEYS | {
    "stop_grace_s",
    "guards",
    "model",
    "learning_probe",
    "monitors",
    "emulate_gpu_gib",
    "cache_dir",
}
_GUARD_KEYS = {"max_non_finite_steps"}
_MODEL_KEYS = {"path", "build_tiny"}
_REWARD_KEYS = {"scheme", "localisation_bonus", "remove_ties"}
_JUDGE_KEYS = set(JudgeSettings.__dataclass_fields__)
_SERVE_KEYS = set(ServeSettings.__dataclass_fields__)
_PROBE_KEYS = set(ProbeSettings.__dataclass_fields__)
_MONITOR_KEYS = set(MonitorSettings.__dataclass_fields__)


def _unknown(section: Mapping[str, Any], allowed: set[str], prefix: str) -> list[str]:
    """One problem line per key of `section` that is not in `allowed`, with the closest known key."""
    problems = []
    for key in section:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), sorted(allowed), n=1)
            hint = f"did you mean medplay.{prefix}{close[0]}? " if close else ""
            problems.append(f"medplay.{prefix}{key}: unknown key; {hint}known keys: {', '.join(sorted(allowed))}")
    return problems


def _is_number(value: Any) -> bool:
    """True for an int or float (YAML's true/false are not numbers)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _run_settings(section: Mapping[str, Any], problems: list[str]) -> None:
    """Check the spelling and types of the `medplay:` keys that the launcher and reliability code read."""
    problems += _unknown(section, _TOP_KEYS | _RUN_KEYS, "")
    for key in sorted(_PATH_KEYS & set(section)):
        if not (isinstance(section[key], str) and section[key]):
            problems.append(f"medplay.{key}: {section[key]!r} must be a path (a non-empty string)")
    if "stop_grace_s" in section and not (_is_number(section["stop_grace_s"]) and section["stop_grace_s"] > 0):
        problems.append(f"medplay.stop_grace_s: {section['stop_grace_s']!r} must be a number of seconds > 0")
    cache = section.get("cache_dir")
    if cache is not None and not (isinstance(cache, str) and cache):
        problems.append(f"medplay.cache_dir: {cache!r} must be null or a folder (a non-empty string)")
    emulated = section.get("emulate_gpu_gib")
    if emulated is not None and not (_is_number(emulated) and emulated > 0):
        problems.append(f"medplay.emulate_gpu_gib: {emulated!r} must be null or a number of GiB > 0")
    guards = section.get("guards") or {}
    problems += _unknown(guards, _GUARD_KEYS, "guards.")
    steps = guards.get("max_non_finite_steps", 1)
    if isinstance(steps, bool) or not (isinstance(steps, int) and steps >= 1):
        problems.append(f"medplay.guards.max_non_finite_steps: {steps!r} must be an integer >= 1")
    model = section.get("model") or {}
    problems += _unknown(model, _MODEL_KEYS, "model.")
    if "path" in model and not (isinstance(model["path"], str) and model["path"]):
        problems.append(f"medplay.model.path: {model['path']!r} must be a folder or hub id (a non-empty string)")
    if not isinstance(model.get("build_tiny", False), bool):
        problems.append(f"medplay.model.build_tiny: {model['build_tiny']!r} must be true or false")


def _missing(section: Mapping[str, Any], required: set[str], prefix: str) -> list[str]:
    """One problem line per required key that `section` lacks."""
    return [f"medplay.{prefix}{key}: missing" for key in sorted(required - set(section))]


def _choice(value: Any, choices: tuple[str, ...], key: str, problems: list[str]) -> str:
    """`value` when it is one of `choices`, else a problem is recorded."""
    if value not in choices:
        problems.append(f"medplay.{key}: {value!r} is not one of {', '.join(choices)}")
    return value


def _judge_settings(section: Mapping[str, Any], problems: list[str]) -> JudgeSettings | None:
    """JudgeSettings from `medplay.judge` (every key required: the values live in configs/medplay.yaml), recording problems."""
    problems += _unknown(section, _JUDGE_KEYS, "judge.")
    problems += _missing(section, _JUDGE_KEYS, "judge.")
    values = {k: v for k, v in section.items() if k in _JUDGE_KEYS}
    serve = _serve_values(values.get("serve") or {}, problems)
    get = values.get
    backend = _choice(get("backend"), JUDGE_BACKENDS, "judge.backend", problems)
    if backend == "http" and not get("url"):
        problems.append("medplay.judge.url: required when judge.backend is http (e.g. http://127.0.0.1:8100)")
    if backend == "openai" and not (get("base_url") and get("model")):
        problems.append(
            "medplay.judge.base_url and medplay.judge.model: both required when judge.backend is openai "
            "(a remote OpenAI-compatible judge); for smoke tests only, medplay.judge.backend=rules"
        )
    if backend in ("vllm", "hf") and not get("model"):
        problems.append(f"medplay.judge.model: required when judge.backend is {backend} (a local model folder)")
    if "timeout_s" in values and not (_is_number(values["timeout_s"]) and values["timeout_s"] > 0):
        problems.append(f"medplay.judge.timeout_s: {values['timeout_s']!r} must be a number of seconds > 0")
    for key in ("gold_probe_fraction", "gold_accuracy_floor"):
        if key in values and not (_is_number(values[key]) and 0 <= values[key] <= 1):
            problems.append(f"medplay.judge.{key}: {values[key]!r} must be a number in [0, 1]")
    for key in ("batch_size", "attempts", "max_consecutive_failures", "gold_min_count"):
        if key in values and not _is_count(values[key]):
            problems.append(f"medplay.judge.{key}: {values[key]!r} must be an integer >= 1")
    _port(values, "judge.server_port", problems, free_port=False)
    ratios = (get("min_length_ratio"), get("max_length_ratio"))
    if not (all(map(_is_number, ratios)) and 0 < ratios[0] <= 1 <= ratios[1]):
        problems.append(
            f"medplay.judge.min_length_ratio/max_length_ratio: [{ratios[0]}, {ratios[1]}] must satisfy 0 < min <= 1 <= max"
        )
    if problems:
        return None
    return JudgeSettings.from_mapping({**values, "serve": serve})


def _is_count(value: Any) -> bool:
    """True for an integer >= 1 (not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _port(values: Mapping[str, Any], key: str, problems: list[str], *, free_port: bool) -> None:
    """Record a problem when `values[key's last part]` is not a port number (0 allowed with `free_port`)."""
    name = key.rsplit(".", 1)[-1]
    if name not in values:
        return
    port = values[name]
    if not (isinstance(port, int) and not isinstance(port, bool) and (0 if free_port else 1) <= port < 65536):
        what = "0 (a free port) or a port number" if free_port else "a port number (1-65535)"
        problems.append(f"medplay.{key}: {port!r} must be {what}")


def _serve_values(section: Mapping[str, Any], problems: list[str]) -> dict[str, Any]:
    """The checked values of `medplay.judge.serve`, recording problems."""
    problems += _unknown(section, _SERVE_KEYS, "judge.serve.")
    problems += _missing(section, _SERVE_KEYS, "judge.serve.")
    values = {k: v for k, v in section.items() if k in _SERVE_KEYS}
    extra = values.get("extra_args") or ()
    if isinstance(extra, str) or not all(isinstance(arg, str) for arg in extra):
        problems.append(f"medplay.judge.serve.extra_args: {extra!r} must be a list of strings")
    share = values.get("gpu_memory_utilization", 0.5)
    if not (_is_number(share) and 0 < share < 1):
        problems.append(f"medplay.judge.serve.gpu_memory_utilization: {share!r} must be in (0, 1)")
    for key in ("max_num_seqs", "max_tokens", "concurrency", "kv_cache_memory_bytes", "max_model_len"):
        value = values.get(key)
        if value is not None and not _is_count(value):
            problems.append(f"medplay.judge.serve.{key}: {value!r} must be an integer >= 1")
    _port(values, "judge.serve.port", problems, free_port=True)
    startup = values.get("startup_timeout_s", 1)
    if not (_is_number(startup) and startup > 0):
        problems.append(f"medplay.judge.serve.startup_timeout_s: {startup!r} must be > 0")
    return values


def _probe_settings(section: Mapping[str, Any], problems: list[str]) -> ProbeSettings:
    """ProbeSettings from `medplay.learning_probe` (optional; absent means off), recording problems."""
    problems += _unknown(section, _PROBE_KEYS, "learning_probe.")
    values = {k: v for k, v in section.items() if k in _PROBE_KEYS}
    for key, value in values.items():
        if not isinstance(value, bool):
            problems.append(f"medplay.learning_probe.{key}: {value!r} must be true or false")
    return ProbeSettings(**values)


def _monitor_settings(section: Mapping[str, Any], problems: list[str]) -> MonitorSettings:
    """MonitorSettings from `medplay.monitors` (every key in configs/medplay.yaml), recording problems."""
    problems += _unknown(section, _MONITOR_KEYS, "monitors.")
    problems += _missing(section, _MONITOR_KEYS, "monitors.")
    patience = section.get("patience", 1)
    if isinstance(patience, bool) or not (isinstance(patience, int) and patience >= 1):
        problems.append(f"medplay.monitors.patience: {patience!r} must be an integer >= 1")
    actions = tuple(a.value for a in AlarmAction)
    action = _choice(section.get("action", AlarmAction.WARN.value), actions, "monitors.action", problems)
    most = section.get("self_bleu_max_rewrites", 2)
    if isinstance(most, bool) or not (isinstance(most, int) and most >= 2):
        problems.append(f"medplay.monitors.self_bleu_max_rewrites: {most!r} must be an integer >= 2")
    given = section.get("alarms") or {}
    if not isinstance(given, Mapping):
        problems.append(f"medplay.monitors.alarms: {given!r} must be a mapping of alarm name to threshold")
        given = {}
    problems += _unknown(given, set(ALARMS), "monitors.alarms.")
    problems += _missing(given, set(ALARMS), "monitors.alarms.")
    alarms: dict[str, float | None] = dict.fromkeys(ALARMS)
    for name in set(given) & set(ALARMS):
        value = given[name]
        if value is not None and not (_is_number(value) and value >= 0):
            problems.append(f"medplay.monitors.alarms.{name}: {value!r} must be a number >= 0, or null (no alarm)")
            continue
        alarms[name] = None if value is None else float(value)
    return MonitorSettings(
        patience=patience,
        action=AlarmAction(action) if action in actions else AlarmAction.WARN,
        self_bleu_max_rewrites=most,
        alarms=tuple(alarms.items()),
    )


def _game_config(section: Mapping[str, Any], problems: list[str]) -> GameConfig:
    """GameConfig from `medplay.rewards`, recording problems (the benign mode comes from each data row)."""
    problems += _unknown(section, _REWARD_KEYS, "rewards.")
    problems += _missing(section, _REWARD_KEYS, "rewards.")
    scheme = _choice(section.get("scheme"), tuple(s.value for s in RewardScheme), "rewards.scheme", problems)
    if not _is_number(section.get("localisation_bonus", 0.0)):
        problems.append(f"medplay.rewards.localisation_bonus: {section['localisation_bonus']!r} must be a number")
    if not isinstance(section.get("remove_ties", True), bool):
        problems.append(f"medplay.rewards.remove_ties: {section['remove_ties']!r} must be true or false")
    try:
        rewards = RewardConfig(
            scheme=scheme if scheme in {s.value for s in RewardScheme} else RewardScheme.GENERAL_SUM,
            localisation_bonus=float(section.get("localisation_bonus", 0.0))
            if _is_number(section.get("localisation_bonus", 0.0))
            else 0.0,
            remove_ties=section.get("remove_ties", True) is not False,
        )
    except (TypeError, ValueError) as error:
        problems.append(f"medplay.rewards: {error}")
        rewards = RewardConfig()
    return GameConfig(rewards=rewards)


def selfplay_settings(section: Mapping[str, Any] | None, other_problems: Sequence[str] = ()) -> SelfPlaySettings:
    """Validate the `medplay:` config section; raises UserInputError listing every problem (`other_problems` too)."""
    if section is None:
        raise UserInputError("the training config has no `medplay:` section", field="medplay")
    problems = [*other_problems, *_missing(section, _TOP_KEYS, "")]
    _run_settings(section, problems)
    mode = _choice(section.get("training_mode"), tuple(m.value for m in TrainingMode), "training_mode", problems)
    adversarial = section.get("adversarial_games", True)
    if not isinstance(adversarial, bool):
        problems.append(f"medplay.adversarial_games: {adversarial!r} must be true or false")
    game = _game_config(section.get("rewards") or {}, problems)
    judge = _judge_settings(section.get("judge") or {}, problems)
    probe = _probe_settings(section.get("learning_probe") or {}, problems)
    monitors = _monitor_settings(section.get("monitors") or {}, problems)
    if mode == TrainingMode.ATTACKER.value and adversarial is False:
        problems.append("medplay.adversarial_games: false leaves training_mode attacker nothing to train on")
    if problems:
        raise UserInputError("invalid training config:\n  " + "\n  ".join(problems), field="config")
    return SelfPlaySettings(
        training_mode=TrainingMode(mode),
        adversarial_games=adversarial,
        game=game,
        judge=judge,
        probe=probe,
        monitors=monitors,
    )


def settings_from_trainer_config(config: Any, other_problems: Sequence[str] = ()) -> SelfPlaySettings:
    """SelfPlaySettings from verl's whole trainer config (a DictConfig with a `medplay:` section)."""
    from omegaconf import OmegaConf

    section = config.get("medplay") if hasattr(config, "get") else None
    return selfplay_settings(None if section is None else OmegaConf.to_container(section, resolve=True), other_problems)
