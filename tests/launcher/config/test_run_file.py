"""A settings file (`--config`) stands for the overrides it holds: same keys, same types, same checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from medical_team.cli import main
from medical_team.common.errors import UserInputError
from medical_team.launcher.config.run_file import hydra_value, run_file_overrides

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "configs" / "run.example.yaml"


@pytest.mark.parametrize(
    "value",
    ["plain", "it's", "a\\b", "ends\\", "back\\'quote", 'say "x"', "${medplay.output_dir}/x", "a,b=c", "", "1e-6",
     1, -3, 0.5, 1e-06, True, False, None, [1, "two", [3.5]], {}, {"k": 1, "s": "v w"}],
)  # fmt: skip
def test_each_value_reads_back_the_same_in_hydras_grammar(value: object) -> None:
    parsed = OverridesParser.create().parse_overrides([f"key={hydra_value(value)}"])[0].value()
    assert parsed == value and type(parsed) is type(value)


def test_the_example_file_gives_its_settings_in_order() -> None:
    assert run_file_overrides(EXAMPLE) == [
        "profile=cpu-smoke",
        "medplay.output_dir='build/my-run'",
        "medplay.data_dir='build/my-run/data'",
        "medplay.rewards.scheme='general_sum'",
        "medplay.judge.backend='rules'",
        "trainer.total_training_steps=3",
        "trainer.save_freq=1",
        "actor_rollout_ref.actor.optim.lr=1e-06",
    ]


def test_config_get_reads_the_file_and_the_command_line_wins(capsys: pytest.CaptureFixture[str]) -> None:
    keys = ["trainer.total_training_steps", "actor_rollout_ref.actor.optim.lr", "medplay.rewards.scheme"]
    assert main(["config", "get", "--config", str(EXAMPLE), *keys, "medplay.rewards.scheme=zero_sum"]) == 0
    assert capsys.readouterr().out.splitlines() == ["3", "1e-06", "zero_sum"]


def test_mistakes_in_the_file_are_all_named_before_any_work(tmp_path: Path, capfd) -> None:
    settings = tmp_path / "run.yaml"
    settings.write_text(
        "profile: cpu-smoke\nmedplay:\n  rewards: {scheme: foo}\n  stop_grace: 3\n"
        "trainer: {totl_epochs: 2}\nactor_rollout_ref.actor.optim.lr: -1\n"
    )
    assert main(["train", "--config", str(settings), f"medplay.output_dir={tmp_path / 'out'}"]) == 2
    err = capfd.readouterr().err
    for expected in (
        "medplay.rewards.scheme: 'foo' must be one of",
        "medplay.stop_grace: unknown key; did you mean medplay.stop_grace_s?",
        "trainer.totl_epochs: verl 0.9.1 does not define this key; did you mean trainer.total_epochs?",
        "actor_rollout_ref.actor.optim.lr: -1; the actor's learning rate must be a number above 0",
    ):
        assert expected in err
    # Nothing started, nothing written but the run's lock (taken before anything is checked).
    assert sorted(path.name for path in (tmp_path / "out").rglob("*")) == ["run.lock"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a\n- b\n", "a settings file is a mapping of keys to values"),
        ("trainer: {total_epochs: [\n", "not a YAML settings file"),
        ("profile: [24g]\n", "field 'profile': a profile name"),
        ("'~trainer.total_epochs': null\n", "field '~trainer.total_epochs': a key is a dotted name"),
        ("medplay: {judge: {url: \"a\\nb\"}}\n", "field 'medplay.judge.url': a value of one line is expected"),
    ],
)
def test_a_broken_file_is_named_with_its_key(tmp_path: Path, text: str, message: str) -> None:
    settings = tmp_path / "run.yaml"
    settings.write_text(text)
    with pytest.raises(UserInputError, match="run.yaml") as raised:
        run_file_overrides(settings)
    assert message in str(raised.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="no such settings file"):
        run_file_overrides(tmp_path / "absent.yaml")
