"""The `medplay` command's dispatch, and `medplay version` through argv."""

from __future__ import annotations

import json

import pytest

from medical_team.cli import COMMANDS, build_parser, main
from medical_team.stack import STACK


def test_every_registered_subcommand_has_a_parser() -> None:
    subparsers = next(action for action in build_parser()._actions if action.dest == "command")
    assert set(subparsers.choices) == set(COMMANDS)


def test_version_prints_the_stack_the_image_tag_and_the_commit_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version"]) == 0
    versions = json.loads(capsys.readouterr().out)
    assert set(versions) == {"medplay", *STACK, "torch_build", "torch_cuda", "image_tag", "git_commit"}
    assert versions["verl"] == "0.9.1"
    assert versions["torch"].startswith("2.13.0")
