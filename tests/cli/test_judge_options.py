"""The judge options are one definition (medical_team/cli/judge_options.py): `medplay judge serve`, `medplay judge
audit` and `medplay eval --crossplay` take the same options (eval spells them --judge-*) and refuse the same mistakes
through argv, each naming its own option."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from medical_team.cli import build_parser, main
from medical_team.judge.judge_kinds import LOCAL_BACKENDS, REACHABLE_BACKENDS

JUDGE_FLAGS = {"backend": "--backend", "model": "--model", "url": "--url", "api_key_env": "--api-key-env"}
EVAL_FLAGS = {
    "backend": "--judge",
    "model": "--judge-model",
    "url": "--judge-url",
    "api_key_env": "--judge-api-key-env",
}
UNSET = "MEDPLAY_TEST_JUDGE_KEY_NEVER_SET"


def _commands(tiny_model_dir: Path, output: Path) -> dict[str, tuple[list[str], dict[str, str], str]]:
    """Each command's argv before its judge options, its flags' names and how its errors name the backend."""
    league = ["eval", "--crossplay", str(tiny_model_dir), str(tiny_model_dir), "--output", str(output)]
    return {
        "serve": (["judge", "serve"], JUDGE_FLAGS, "backend"),
        "audit": (["judge", "audit", "--output", str(output)], JUDGE_FLAGS, "backend"),
        "eval": (league, EVAL_FLAGS, "judge"),
    }


@pytest.mark.parametrize("command", ["serve", "audit", "eval"])
@pytest.mark.parametrize(
    ("options", "field", "message"),
    [
        ({"backend": "openai", "model": "m"}, "url", "{noun} 'openai' needs "),
        ({"backend": "openai", "url": "http://127.0.0.1:9/v1"}, "model", "{noun} 'openai' needs the served model name"),
        ({"backend": "openai", "url": "ftp://x", "model": "m"}, "url", "'ftp://x' is not an http(s) URL"),
        (
            {"backend": "hf", "model": "/nonexistent/model"},
            "model",
            "model directory /nonexistent/model does not exist",
        ),
        (
            {"backend": "openai", "url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": UNSET},
            "api_key_env",
            f"environment variable {UNSET} is not set",
        ),
    ],
)
def test_each_command_refuses_the_same_mistake_naming_its_own_option(
    command: str,
    options: dict[str, str],
    field: str,
    message: str,
    tiny_model_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv, flags, noun = _commands(tiny_model_dir, tmp_path / "out")[command]
    given = [part for name, value in options.items() for part in (flags[name], value)]
    assert main([*argv, *given]) == 2
    err = capsys.readouterr().err.strip()
    assert f"field '{flags[field]}': {message.format(noun=noun)}" in err, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def _options(*path: str) -> dict[str, argparse.Action]:
    """The options of the subcommand at `path` (e.g. judge, serve) by their flag."""
    parser = build_parser()
    for name in path:
        parser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
    return {flag: action for action in parser._actions for flag in action.option_strings}


def test_the_commands_offer_the_backends_they_can_reach() -> None:
    serve, audit, league = _options("judge", "serve"), _options("judge", "audit"), _options("eval")
    assert set(JUDGE_FLAGS.values()) <= set(serve) and set(JUDGE_FLAGS.values()) <= set(audit)
    assert set(EVAL_FLAGS.values()) <= set(league)
    assert tuple(serve["--backend"].choices) == LOCAL_BACKENDS and serve["--backend"].default == "rules"
    assert tuple(audit["--backend"].choices) == REACHABLE_BACKENDS and audit["--backend"].default is None
    assert tuple(league["--judge"].choices) == REACHABLE_BACKENDS and league["--judge"].default == "rules"
    assert "--device" in serve and "--device" in audit and "--judge-device" not in league
