"""The `medplay:` section: valid settings, every problem reported at once, the category each row is played as."""

from __future__ import annotations

from typing import Any

import pytest

from medical_team.common.errors import UserInputError
from medical_team.common.vocab import Category, Role
from medical_team.run.settings import TrainingMode, selfplay_settings


@pytest.fixture()
def section(medplay_section: dict[str, Any]):
    """Build a `medplay:` section with some keys changed."""

    def build(**changes: object) -> dict[str, Any]:
        return {**medplay_section, **changes}

    return build


def test_defaults_are_valid_and_leave_other_keys_alone(section) -> None:
    settings = selfplay_settings(section(output_dir="outputs/x", metrics_file="m.jsonl"))
    assert settings.training_mode is TrainingMode.JOINT
    assert settings.game.rewards.remove_ties and settings.judge.backend == "rules"


def test_every_problem_is_named_at_once(section, medplay_section) -> None:
    # (`http` may leave its URL to the run plan, which the container's pipeline fills: launcher/judge/judge_run.py)
    judge = {**medplay_section["judge"], "backend": "vllm", "model": None, "batch_size": 0}
    del judge["timeout_s"]
    bad = section(
        training_mode="both",
        rewards={"scheme": "sum", "localisation_bonus": 0.0, "remove_ties": True, "bonus": 1},
        judge=judge,
    )
    with pytest.raises(UserInputError) as caught:
        selfplay_settings(bad)
    message = str(caught.value)
    for expected in (
        "medplay.training_mode: 'both' must be one of joint, assessor, attacker",
        "medplay.rewards.scheme: 'sum'",
        "medplay.rewards.bonus: unknown key",
        "medplay.judge.model: required when judge.backend is vllm",
        "medplay.judge.batch_size: 0",
        # every judge key is required: its value lives in configs/medplay.yaml
        "medplay.judge.timeout_s: missing; expected a number of seconds > 0",
    ):
        assert expected in message


def test_attacker_mode_needs_adversarial_games(section) -> None:
    with pytest.raises(UserInputError, match="attacker nothing to train on"):
        selfplay_settings(section(training_mode="attacker", adversarial_games=False))


@pytest.mark.parametrize(
    ("mode", "adversarial", "category", "played"),
    [
        ("joint", True, Category.VANILLA_BENIGN, Category.VANILLA_BENIGN),
        ("attacker", True, Category.VANILLA_HARMFUL, Category.ADVERSARIAL_HARMFUL),
        ("assessor", False, Category.ADVERSARIAL_BENIGN, Category.VANILLA_BENIGN),
        ("assessor", True, Category.ADVERSARIAL_HARMFUL, Category.ADVERSARIAL_HARMFUL),
    ],
)
def test_played_category(section, mode: str, adversarial: bool, category: Category, played: Category) -> None:
    settings = selfplay_settings(section(training_mode=mode, adversarial_games=adversarial))
    assert settings.played_category(category) is played


def test_training_modes_train_their_roles() -> None:
    assert TrainingMode.JOINT.trains(Role.ATTACKER) and TrainingMode.JOINT.trains(Role.ASSESSOR)
    assert TrainingMode.ASSESSOR.trains(Role.ASSESSOR) and not TrainingMode.ASSESSOR.trains(Role.ATTACKER)
    assert TrainingMode.ATTACKER.trains(Role.ATTACKER) and not TrainingMode.ATTACKER.trains(Role.ASSESSOR)


def test_learning_probe_is_off_unless_asked_and_checked(section) -> None:
    assert not selfplay_settings(section()).learning_probe.enabled
    probe = selfplay_settings(section(learning_probe={"enabled": True, "inverted": True})).learning_probe
    assert probe.enabled and probe.inverted
    with pytest.raises(UserInputError) as caught:
        selfplay_settings(section(learning_probe={"enabled": "yes", "flip": True}))
    assert "medplay.learning_probe.enabled: 'yes' must be true or false" in str(caught.value)
    assert "medplay.learning_probe.flip: unknown key" in str(caught.value)


def test_resource_floors_default_to_a_tenth_of_memory_and_one_checkpoint_and_are_checked(section) -> None:
    settings = selfplay_settings(section())
    assert settings.resources.host_memory_floor == 0.1 and settings.resources.trend_steps == 20
    assert settings.resources.disk_floor_gib is None  # one checkpoint, as the run plan estimates it
    for floor in (0, 0.06, 1):
        assert selfplay_settings(section(resources={"host_memory_floor": floor, "disk_floor_gib": 0, "trend_steps": 2}))
    with pytest.raises(UserInputError) as caught:
        selfplay_settings(section(resources={"host_memory_floor": 0.05, "disk_floor_gib": -1, "trend_steps": 1}))
    message = str(caught.value)
    assert "medplay.resources.host_memory_floor: 0.05" in message and "Ray's memory" in message
    assert "medplay.resources.disk_floor_gib: -1" in message and "medplay.resources.trend_steps: 1" in message


def test_monitors_default_to_warnings_and_are_checked(section) -> None:
    from medical_team.game.alarm import AlarmAction

    monitors = selfplay_settings(section()).monitors
    assert monitors.action is AlarmAction.WARN and monitors.patience == 2
    assert {(rule.name, rule.threshold) for rule in monitors.rules} == {
        ("max_self_bleu", 0.9),
        ("max_copy_rate", 0.9),
        ("max_majority_verdict_share", 0.95),
        ("min_error_verdict_share", 0.25),
        ("max_error_verdict_share", 0.75),
    }
    base = section()["monitors"]
    alarms = {**base["alarms"], "max_self_bleu": None, "min_distinct_2": 0.3}
    changed = selfplay_settings(section(monitors={**base, "action": "stop", "patience": 1, "alarms": alarms})).monitors
    assert changed.action is AlarmAction.STOP and changed.patience == 1
    assert {(rule.name, rule.threshold) for rule in changed.rules} == {
        ("min_distinct_2", 0.3),
        ("max_copy_rate", 0.9),
        ("max_majority_verdict_share", 0.95),
        ("min_error_verdict_share", 0.25),
        ("max_error_verdict_share", 0.75),
    }
    with pytest.raises(UserInputError) as caught:
        selfplay_settings(section(monitors={"alarms": ["max_self_bleu"], "self_bleu_max_rewrites": 1}))
    assert "medplay.monitors.alarms: ['max_self_bleu'] must be a mapping with the keys min_distinct_1," in str(
        caught.value
    )
    assert "medplay.monitors.self_bleu_max_rewrites: 1 must be an integer >= 2" in str(caught.value)
    assert "medplay.monitors.patience: missing" in str(caught.value)


def test_difficulty_band_is_a_reward_scheme(section, medplay_section) -> None:
    from medical_team.game import RewardScheme

    rewards = {**medplay_section["rewards"], "scheme": "difficulty_band"}
    assert selfplay_settings(section(rewards=rewards)).game.rewards.scheme is RewardScheme.DIFFICULTY_BAND


def test_the_games_defaults_in_code_agree_with_the_yaml(medplay_section) -> None:
    from medical_team.game import GameConfig

    # GameConfig() and RewardConfig() stand in for the YAML where no run config exists (evaluation, the judge server)
    assert selfplay_settings(medplay_section).game == GameConfig()


def test_an_agent_loop_worker_binds_its_config_once(medplay_section) -> None:
    from omegaconf import OmegaConf

    from medical_team.agent_loop.agent_loop import bound_settings

    config = OmegaConf.create({"medplay": medplay_section})
    first = bound_settings(config)
    assert bound_settings(config) is first  # one bind per worker, not one per game
    other = OmegaConf.create({"medplay": medplay_section})
    assert bound_settings(other) is not first and bound_settings(other) == first


def test_serve_settings_are_validated_with_unknown_keys_named(medplay_section) -> None:
    judge = medplay_section["judge"]
    judge.update(backend="vllm", model="/m", serve={**judge["serve"], "gpu_memory_utilization": 1.5, "gpus": 1})
    with pytest.raises(UserInputError) as caught:
        selfplay_settings(medplay_section)
    assert "medplay.judge.serve.gpu_memory_utilization: 1.5 must be a number in (0, 1)" in str(caught.value)
    assert "medplay.judge.serve.gpus: unknown key" in str(caught.value)


def test_vllm_backend_needs_a_model(medplay_section) -> None:
    medplay_section["judge"].update(backend="vllm", model=None)
    with pytest.raises(UserInputError, match="medplay.judge.model: required when judge.backend is vllm"):
        selfplay_settings(medplay_section)
