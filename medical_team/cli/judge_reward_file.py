"""`medplay judge reward-file`: write (or locate) the OpenRLHF local reward function file.

medplay judge reward-file                       # print where the installed file is
medplay judge reward-file --output reward.py    # write a copy; then: openrlhf ... --remote_rm_url reward.py
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from medical_team.common.errors import UserInputError

FILE_NAME = "medplay_reward_func.py"


def run_reward_file(args: argparse.Namespace) -> int:
    """Print the installed file's path, or copy it to --output (a file path, or a directory to put it in)."""
    import medical_team.judge.openrlhf_reward_func as module

    source = Path(module.__file__)
    if args.output is None:
        print(source)
        return 0
    target = Path(args.output)
    if target.is_dir():
        target = target / FILE_NAME
    if target.suffix != ".py":
        raise UserInputError(
            f"{target} must end in .py (OpenRLHF loads a reward function only from a .py file)", field="--output"
        )
    if not target.parent.is_dir():
        raise UserInputError(f"directory {target.parent} does not exist", field="--output")
    shutil.copyfile(source, target)
    print(f"wrote {target}; pass it to OpenRLHF as --remote_rm_url {target}")
    return 0


def add_reward_file_parser(actions: argparse._SubParsersAction) -> None:
    """Register `medplay judge reward-file`."""
    parser = actions.add_parser(
        "reward-file",
        help="write or locate the OpenRLHF local reward function (--remote_rm_url FILE.py)",
        description="The assessor reward of POST /judge as a file OpenRLHF loads by path (docs/judge.md).",
    )
    parser.add_argument("--output", metavar="PATH", help="where to write a copy (a .py path or a directory)")
    parser.set_defaults(run=run_reward_file)
