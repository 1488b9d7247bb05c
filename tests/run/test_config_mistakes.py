"""A mistake anywhere in the composed config stops the run before Ray, naming key and fix, all at once.

Each case is a real Hydra override of configs/medplay.yaml + cpu-smoke, composed the way `medplay train`
composes it (`compose_config`), then validated the way it validates (verl's part: keys that verl does
not define and values medplay needs, then `settings_from_trainer_config`). A profile file holding the same key reaches the same composed
config, so it is caught the same way.
"""

from __future__ import annotations

import pytest

from medical_team.cli import main
from medical_team.common.errors import UserInputError
from medical_team.launcher.config.compose import available_profiles, compose_config, compose_raw
from medical_team.launcher.config.verl_keys import unknown_verl_keys, verl_base_config, verl_problems
from medical_team.run.settings import settings_from_trainer_config

VERL_BASE = verl_base_config()

# (override, what the message must say)
BAD_CONFIGS = [
    ("+medplay.stop_grace=3", "medplay.stop_grace: unknown key; did you mean medplay.stop_grace_s?"),
    ("+medplay.modle.path=/models/x", "medplay.modle: unknown key; did you mean medplay.model?"),
    ("+medplay.model.pth=/models/x", "medplay.model.pth: unknown key; did you mean medplay.model.path?"),
    ("+medplay.judge.timeot_s=30", "medplay.judge.timeot_s: unknown key; did you mean medplay.judge.timeout_s?"),
    ("+medplay.judge.serve.gpu_memory=0.3", "did you mean medplay.judge.serve.gpu_memory_utilization?"),
    ("+medplay.guards.max_nan_steps=2", "did you mean medplay.guards.max_non_finite_steps?"),
    ("+medplay.rewards.schema=zero_sum", "medplay.rewards.schema: unknown key; did you mean medplay.rewards.scheme?"),
    ("+medplay.learning_probe.enable=true", "did you mean medplay.learning_probe.enabled?"),
    ("medplay.judge.timeout_s=abc", "medplay.judge.timeout_s: 'abc' must be a number of seconds > 0"),
    # `+` on a key configs/medplay.yaml defines: Hydra would refuse it; the value is checked instead
    ("+medplay.judge.timeout_s=abc", "medplay.judge.timeout_s: 'abc' must be a number of seconds > 0"),
    ("medplay.stop_grace_s=-5", "medplay.stop_grace_s: -5 must be a number of seconds > 0"),
    ("medplay.guards.max_non_finite_steps=0", "medplay.guards.max_non_finite_steps: 0 must be an integer >= 1"),
    ("medplay.model.build_tiny=yes", "medplay.model.build_tiny: 'yes' must be true or false"),
    ("medplay.training_mode=jiont", "medplay.training_mode: 'jiont' must be one of joint, assessor, attacker"),
    ("medplay.adversarial_games=maybe", "medplay.adversarial_games: 'maybe' must be true or false"),
    ("medplay.rewards.scheme=zero", "medplay.rewards.scheme: 'zero' must be one of general_sum, zero_sum"),
    ("medplay.rewards.remove_ties=sometimes", "medplay.rewards.remove_ties: 'sometimes' must be true or false"),
    ("medplay.rewards.localisation_bonus=high", "medplay.rewards.localisation_bonus: 'high' must be a number"),
    ("medplay.judge.serve.port=99999", "medplay.judge.serve.port: 99999 must be 0 (a free port) or a port number"),
    ("medplay.judge.server_port=0", "medplay.judge.server_port: 0 must be a port number (1-65535)"),
    ("~medplay.judge.batch_size", "medplay.judge.batch_size: missing; expected an integer >= 1"),
    ("medplay.judge.gold_probe_fraction=2", "medplay.judge.gold_probe_fraction: 2 must be a number in [0, 1]"),
    ("medplay.judge.min_length_ratio=abc", "medplay.judge.min_length_ratio: 'abc' must be a number"),
    ("medplay.judge.max_length_ratio=0.9", "medplay.judge.min_length_ratio: 0.5 with max 0.9: the length ratio band"),
    ("+medplay.monitors.patiance=2", "medplay.monitors.patiance: unknown key; did you mean medplay.monitors.patience?"),
    ("+medplay.monitors.alarms.max_selfbleu=0.8", "did you mean medplay.monitors.alarms.max_self_bleu?"),
    ("medplay.monitors.action=halt", "medplay.monitors.action: 'halt' must be one of warn, stop"),
    ("medplay.monitors.patience=0", "medplay.monitors.patience: 0 must be an integer >= 1"),
    ("medplay.monitors.alarms.max_copy_rate=lots", "alarms.max_copy_rate: 'lots' must be null or a number >= 0"),
    # verl's part: keys its own ppo_trainer config does not define
    (
        "+trainer.totl_epochs=2",
        "trainer.totl_epochs: verl 0.9.1 does not define this key; did you mean trainer.total_epochs?",
    ),
    (
        "+data.max_promt_length=512",
        "data.max_promt_length: verl 0.9.1 does not define this key; did you mean data.max_prompt_length?",
    ),
    ("+actor_rollout_ref.actor.optim.lrr=1e-5", "did you mean actor_rollout_ref.actor.optim.lr?"),
    # verl's part: values medplay cannot run without
    ("trainer.use_v1=false", "trainer.use_v1: false; medplay runs only on verl's V1 trainer"),
    # verl's part: numbers a run cannot start with
    ("actor_rollout_ref.actor.optim.lr=-1", "actor_rollout_ref.actor.optim.lr: -1; the actor's learning rate must be"),
    ("actor_rollout_ref.actor.optim.lr=0", "actor_rollout_ref.actor.optim.lr: 0; the actor's learning rate must be"),
    ("data.max_response_length=abc", "data.max_response_length: abc; the response's length cap in tokens must be"),
    ("actor_rollout_ref.rollout.n=0", "actor_rollout_ref.rollout.n: 0; games per seed row must be a number above 0"),
    ("trainer.total_training_steps=abc", "trainer.total_training_steps: abc; training steps: null or a number above 0"),
    # verl reads anything but an int as "keep every checkpoint"
    ("trainer.max_actor_ckpt_to_keep=2.0", "trainer.max_actor_ckpt_to_keep: 2.0; the checkpoints kept (null, 0 or below"),
    ("trainer.max_actor_ckpt_to_keep=two", "trainer.max_actor_ckpt_to_keep: two; the checkpoints kept"),
    # verl's part: values of another type than verl's YAML gives them
    ("actor_rollout_ref.rollout.temperature=hot", "actor_rollout_ref.rollout.temperature: hot; verl expects a number"),
    ("trainer.val_before_train=1", "trainer.val_before_train: 1; verl expects true or false"),
    # a prompt cap that cannot hold a rewrite (cpu-smoke's response cap: 48 tokens)
    ("data.max_prompt_length=40", "data.max_prompt_length: 40; the assessor's prompt holds its instructions and"),
    # a key nobody defines, without `+`: named with the others, not Hydra's first refusal alone
    ("trainer.totl_epochs=2", "trainer.totl_epochs: verl 0.9.1 does not define this key; did you mean"),
    ("medplay.stop_grace=3", "medplay.stop_grace: unknown key; did you mean medplay.stop_grace_s?"),
]


def problems_of(*overrides: str) -> str:
    """The validation message for cpu-smoke with these overrides ('' when the config is valid)."""
    try:
        config = compose_config(["profile=cpu-smoke", *overrides])
        settings_from_trainer_config(config, verl_problems(config, VERL_BASE))
    except UserInputError as error:
        return str(error)
    return ""


@pytest.mark.parametrize("profile", available_profiles())
def test_every_shipped_profile_defines_only_keys_verl_reads(profile: str) -> None:
    assert unknown_verl_keys(compose_raw([f"profile={profile}"]), VERL_BASE) == []


def test_the_shipped_config_is_valid() -> None:
    assert problems_of() == ""


def test_free_form_subtrees_and_keys_verl_reads_are_not_typos() -> None:
    assert (
        problems_of(
            "+actor_rollout_ref.model.override_config.rope_theta=10000",
            "+ray_kwargs.ray_init.object_store_memory=1000000000",
            "+actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space=1",
        )
        == ""
    )


@pytest.mark.parametrize(("override", "expected"), BAD_CONFIGS, ids=[case[0] for case in BAD_CONFIGS])
def test_each_mistake_is_named_with_its_fix(override: str, expected: str) -> None:
    assert expected in problems_of(override)


def test_every_mistake_is_listed_at_once() -> None:
    cases = [*BAD_CONFIGS[:6], *BAD_CONFIGS[-3:]]
    message = problems_of(*(override for override, _ in cases))
    for _, expected in cases:
        assert expected in message


def test_medplay_train_exits_2_before_ray_with_one_message(tmp_path, capfd: pytest.CaptureFixture[str]) -> None:
    overrides = ["+medplay.stop_grace=3", "+trainer.totl_epochs=2", f"medplay.output_dir={tmp_path}"]
    assert main(["train", "profile=cpu-smoke", *overrides]) == 2
    err = capfd.readouterr().err
    assert "did you mean medplay.stop_grace_s?" in err and "did you mean trainer.total_epochs?" in err
    assert "Traceback" not in err


def test_the_plan_refuses_what_train_refuses(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    overrides = ["profile=80g", "medplay.rewards.scheme=foo", "actor_rollout_ref.actor.optim.lr=-1"]
    assert main(["probe", "--plan", "--output", str(tmp_path / "plan.json"), *overrides]) == 2
    err = capsys.readouterr().err
    assert "medplay.rewards.scheme: 'foo' must be one of" in err and "optim.lr: -1; the actor's learning rate" in err
    assert not (tmp_path / "plan.json").exists()


def test_config_get_and_the_probe_refuse_what_train_refuses(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    mistakes = ["trainer.totl_epochs=2", "medplay.rewards.scheme=foo", "actor_rollout_ref.actor.optim.lr=-1"]
    found = [
        "did you mean trainer.total_epochs?",
        "medplay.rewards.scheme: 'foo' must be one of",
        "optim.lr: -1; the actor's learning rate",
    ]
    assert main(["config", "get", "trainer.total_epochs", "profile=cpu-smoke", *mistakes]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and all(text in captured.err for text in found)
    # The probe on this CPU host checks the settings it is given as `medplay train` would, before any work.
    assert main(["probe", "--output", str(tmp_path / "probe.json"), *mistakes]) == 2
    err = capsys.readouterr().err
    assert all(text in err for text in found), err
    assert not (tmp_path / "probe.json").exists()


def test_verls_legacy_trainer_is_refused_before_ray(tmp_path, capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "profile=cpu-smoke", "trainer.use_v1=false", f"medplay.output_dir={tmp_path}"]) == 2
    err = capfd.readouterr().err
    assert "trainer.use_v1: false; medplay runs only on verl's V1 trainer" in err and "set trainer.use_v1=true" in err
    assert "Traceback" not in err
