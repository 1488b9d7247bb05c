"""`medplay config get KEY... [overrides]`: values of the composed training config, as `medplay train` would use it."""

from __future__ import annotations

import argparse

from medical_team.cli.train import (
    add_config_argument,
    add_probe_report_argument,
    probe_report_path,
    user_overrides,
    with_profile,
)
from medical_team.common.errors import UserInputError


def is_override(argument: str) -> bool:
    """Hydra overrides are `key=value`, `+key=value` or `~key`; anything else is a key to print."""
    return "=" in argument or argument.startswith("~")


def value_text(value: object, *, one_line: bool) -> str:
    """A scalar as the shell reads it (null: empty, booleans: true/false); a section as YAML (one_line: JSON)."""
    import json

    from omegaconf import DictConfig, ListConfig, OmegaConf

    if isinstance(value, DictConfig | ListConfig):
        if one_line:
            return json.dumps(OmegaConf.to_container(value))
        return OmegaConf.to_yaml(value).rstrip("\n")
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def run_get(args: argparse.Namespace) -> int:
    """Compose and check the config for the overrides (profile from the probe, as `medplay train`), print each key's value."""
    from omegaconf import OmegaConf

    from medical_team.launcher.config.compose import compose_config
    from medical_team.launcher.config.verl_keys import check_config

    keys = [arg for arg in args.arguments if not is_override(arg)]
    overrides = [arg for arg in args.arguments if is_override(arg)]
    if not keys:
        raise UserInputError("name at least one key, e.g. medplay.judge.backend", field="KEY")
    config = compose_config(with_profile(user_overrides(args, overrides), probe_report_path(args)))
    if not args.unchecked:
        check_config(config)  # what `medplay train` would refuse, refused here first
    missing = object()
    values = [OmegaConf.select(config, key, default=missing) for key in keys]
    for key, value in zip(keys, values, strict=True):
        if value is missing:
            raise UserInputError("no such key in the composed config", field=key)
    for value in values:
        print(value_text(value, one_line=len(keys) > 1))
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay config get`."""
    parser = subparsers.add_parser("config", help="read the composed training config (what `medplay train` uses)")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    get = actions.add_parser(
        "get",
        help="print keys of the composed config",
        description="Print each KEY (e.g. medplay.judge.backend) of the config `medplay train OVERRIDES` would "
        "use (configs/medplay.yaml, the profile and the overrides, resolved), one line per key. Arguments with "
        "`=` (or starting with `~`) are overrides. null prints an empty line; a section prints as YAML, or as "
        "one line of JSON when several keys are asked for.",
    )
    add_probe_report_argument(get)
    add_config_argument(get)
    get.add_argument(
        "--unchecked",
        action="store_true",
        help="print the values even of a config `medplay train` would refuse (the container reads its stop grace "
        "so, before the probe has chosen the profile that the checks need)",
    )
    get.add_argument("arguments", nargs="+", metavar="KEY|OVERRIDE", help="dotted keys, then Hydra overrides")
    get.set_defaults(run=run_get)
