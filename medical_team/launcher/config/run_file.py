"""A run's settings file (`--config run.yaml`) as the Hydra overrides it stands for.

The file holds the same keys as the overrides, nested or dotted: `profile: 24g`, `trainer: {total_training_steps: 100}`
or `trainer.total_training_steps: 100`; a key that verl reads but does not declare keeps its `+`
(`"+actor_rollout_ref.rollout.engine_kwargs.vllm.distributed_executor_backend": uni`). Each value becomes one
override, typed as the YAML typed it (OmegaConf's loader: `1e-6` is a number, `'1'` text), so the file and the
command line go through the same composition and the same checks; overrides given on the command line come after
the file's, and win. `python -m medical_team.launcher.config.run_file FILE` prints them one per line (the container's
pipeline reads `/config/run.yaml` so).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from medical_team.common.errors import UserInputError

PROFILE_KEY = "profile"
_ADD_PREFIXES = ("++", "+")
_PROFILE_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_BACKSLASHES_BEFORE_QUOTE = re.compile(r"(\\+)(?='|$)")


def run_file_overrides(path: Path) -> list[str]:
    """The overrides of a settings file, in the file's order (UserInputError naming the file and key otherwise)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException
    from yaml import YAMLError

    if not path.is_file():
        raise UserInputError("no such settings file", file=str(path), field="--config")
    try:
        loaded = OmegaConf.load(path)
    except (OSError, UnicodeDecodeError, YAMLError, OmegaConfBaseException) as error:
        raise UserInputError(f"not a YAML settings file: {' '.join(str(error).split())}", file=str(path)) from None
    content = OmegaConf.to_container(loaded, resolve=False)
    if not isinstance(content, dict):
        raise UserInputError("a settings file is a mapping of keys to values, e.g. `profile: 24g`", file=str(path))
    return [_override(key, value, path) for key, value in _leaves(content, "", path)]


def _leaves(mapping: Mapping[Any, Any], prefix: str, path: Path) -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every value that is not a non-empty mapping, nested keys joined by dots."""
    for key, value in mapping.items():
        if not isinstance(key, str) or not key or "=" in key or key.startswith("~"):
            raise UserInputError(
                "a key is a dotted name (a `+` in front to add it); `=` and `~` are not keys",
                file=str(path),
                field=str(key),
            )
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from _leaves(value, dotted + ".", path)
        else:
            yield dotted, value


def _override(key: str, value: Any, path: Path) -> str:
    """`key=value` in Hydra's override grammar; `profile` as the group choice it is."""
    if key == PROFILE_KEY:
        if not isinstance(value, str) or not _PROFILE_NAME.fullmatch(value):
            raise UserInputError(f"a profile name, e.g. 24g; got {value!r}", file=str(path), field=key)
        return f"{key}={value}"
    bare = key.removeprefix("++").removeprefix("+")
    if bare.startswith(("+", ".")) or ".." in bare or bare.endswith("."):
        raise UserInputError("not a dotted key name", file=str(path), field=key)
    try:
        return f"{key}={hydra_value(value)}"
    except ValueError as error:
        raise UserInputError(str(error), file=str(path), field=bare) from None


def hydra_value(value: Any) -> str:
    """A YAML value written in Hydra's override grammar, parsed back to the same value and type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)  # 1e-06, inf, nan: Hydra's float grammar reads these
    if isinstance(value, str):
        if "\n" in value or "\r" in value:
            raise ValueError("a value of one line is expected (the overrides are passed one per line)")
        return "'" + _BACKSLASHES_BEFORE_QUOTE.sub(lambda run: run.group(1) * 2, value).replace("'", "\\'") + "'"
    if isinstance(value, list):
        return "[" + ",".join(hydra_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{key}:{hydra_value(item)}" for key, item in value.items()) + "}"
    raise ValueError(f"cannot write a {type(value).__name__} value as an override")


def main(argv: list[str]) -> int:
    """Print a settings file's overrides one per line; a bad file: its error on stderr, exit 2."""
    if len(argv) != 1:
        print("usage: python -m medical_team.launcher.config.run_file FILE", file=sys.stderr)
        return 2
    try:
        overrides = run_file_overrides(Path(argv[0]))
    except UserInputError as error:
        print(f"medplay: {error}", file=sys.stderr)
        return 2
    print("\n".join(overrides))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
