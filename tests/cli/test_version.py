"""The `medplay` command's dispatch, and `medplay version` through argv."""

from __future__ import annotations

import json

import pytest

from medical_team.cli import COMMANDS, build_parser, main
from medical_team.run.stack import STACK


def test_every_registered_subcommand_has_a_parser() -> None:
    subparsers = next(action for action in build_parser()._actions if action.dest == "command")
    assert set(subparsers.choices) == set(COMMANDS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_subcommand_says_what_it_does_in_its_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_status:
        main([command, "--help"])
    assert exit_status.value.code == 0
    usage, description, *_ = capsys.readouterr().out.split("\n\n")
    assert usage.startswith(f"usage: medplay {command}") and description.strip()
    assert not description.startswith(("positional arguments:", "options:"))


def test_version_prints_the_stack_the_image_tag_and_the_commit_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version"]) == 0
    versions = json.loads(capsys.readouterr().out)
    assert set(versions) == {"medplay", *STACK, "torch_build", "torch_cuda", "image_tag", "git_commit"}
    assert versions["verl"] == "0.9.1"
    assert versions["torch"].startswith("2.13.0")
