"""Bind a config section (plain values) to frozen dataclasses, reporting every problem at once.

A field's type is its annotation (bool, int, float, str, an Enum, a nested dataclass, `tuple[str, ...]`,
each optionally `| None`); `check(test, expected)` adds a range; a `Rules` class adds cross-field
rules. Every field is required: the values live in the commented YAML, never in code, so a
dataclass default is ignored here. Each problem names the key, the value and what is expected.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from enum import Enum
from typing import Any, TypeVar

from medical_team.common.errors import UserInputError

T = TypeVar("T")
_BAD = object()  # a value that did not bind; its problem is already recorded
_TYPE_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def check(test: Callable[[Any], bool], expected: str) -> Any:
    """A required dataclass field whose value must also pass `test`; `expected` says what is allowed."""
    return dataclasses.field(metadata={"test": test, "expected": expected})


def at_least(low: float, what: str = "an integer") -> Any:
    """A required field whose value must be >= `low` (`what`: the kind of number, in words)."""
    return check(lambda x: x >= low, f"{what} >= {low}")


def above(low: float, what: str) -> Any:
    """A required field whose value must be > `low` (`what`: the kind of number, in words)."""
    return check(lambda x: x > low, f"{what} > {low}")


class Rules:
    """Base of a frozen dataclass with cross-field rules: checked when bound, and as a ValueError when built."""

    @staticmethod
    def problems(values: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
        """(key, problem) per broken rule; `values` holds only the fields that bound, so rules use `.get`."""
        return iter(())

    def __post_init__(self) -> None:
        found = [f"{key}: {problem}" for key, problem in self.problems(vars(self))]
        if found:
            raise ValueError("; ".join(found))


def bind(cls: type[T], values: Any, path: str, header: str, other_problems: Sequence[str] = ()) -> T:
    """`values` as a `cls` (keys under `path`); raises UserInputError listing every problem, `other_problems` first."""
    problems = list(other_problems)
    bound = _bind(cls, values, path, problems)
    if problems:
        raise UserInputError(f"{header}:\n  " + "\n  ".join(problems), field=path)
    return bound


def _bind(cls: type[T], values: Any, path: str, problems: list[str]) -> Any:
    """`values` bound to the dataclass `cls`, or _BAD with its problems recorded."""
    fields = {field.name: field for field in dataclasses.fields(cls)}
    if not isinstance(values, Mapping):
        problems.append(f"{path}: {values!r} must be a mapping with the keys {', '.join(fields)}")
        return _BAD
    for key in values:
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1)
            hint = f"did you mean {path}.{close[0]}? " if close else ""
            problems.append(f"{path}.{key}: unknown key; {hint}known keys: {', '.join(sorted(fields))}")
    hints = typing.get_type_hints(cls)
    bound = {}
    for name, field in fields.items():
        if name not in values:
            problems.append(f"{path}.{name}: missing; expected {_expected(hints[name], field.metadata)}")
        elif (value := _value(hints[name], values[name], f"{path}.{name}", field.metadata, problems)) is not _BAD:
            bound[name] = value
    found = cls.problems(bound) if issubclass(cls, Rules) else ()
    broken = [f"{path}.{key}: {problem}" for key, problem in found if key in bound]
    problems += broken
    if broken or len(bound) < len(fields):
        return _BAD
    try:
        return cls(**bound)
    except ValueError as error:  # a check of the class itself (e.g. `__post_init__`)
        problems.append(f"{path}: {error}")
        return _BAD


def _value(hint: Any, value: Any, key: str, metadata: Mapping[str, Any], problems: list[str]) -> Any:
    """One field's value converted to `hint` and checked, or _BAD with its problem recorded."""
    inner = _without_none(hint)
    if value is None and inner is not hint:
        return None
    if dataclasses.is_dataclass(inner):
        return _bind(inner, value, key, problems)
    converted, test = _convert(inner, value), metadata.get("test")
    if converted is _BAD or (test is not None and not test(converted)):
        problems.append(f"{key}: {value!r} must be {_expected(hint, metadata)}")
        return _BAD
    return converted


def _convert(hint: Any, value: Any) -> Any:
    """`value` as a `hint` (ints taken as floats, lists as tuples), or _BAD when it is not one."""
    if isinstance(hint, type) and issubclass(hint, Enum):
        try:
            return hint(value)
        except (ValueError, TypeError):
            return _BAD
    if typing.get_origin(hint) is tuple:
        (item, _) = typing.get_args(hint)
        ok = isinstance(value, list | tuple) and all(isinstance(v, item) for v in value)
        return tuple(value) if ok else _BAD
    if isinstance(value, bool) and hint is not bool:
        return _BAD  # YAML's true/false are not numbers
    if hint is float and isinstance(value, int):
        return float(value)
    return value if isinstance(value, hint) else _BAD


def _without_none(hint: Any) -> Any:
    """`X` for `X | None`, else `hint` itself."""
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        return next(arg for arg in typing.get_args(hint) if arg is not type(None))
    return hint


def _expected(hint: Any, metadata: Mapping[str, Any]) -> str:
    """What a field takes, in words: `check`'s text, else its type's."""
    inner = _without_none(hint)
    if "expected" in metadata:
        what = metadata["expected"]
    elif isinstance(inner, type) and issubclass(inner, Enum):
        what = "one of " + ", ".join(str(member.value) for member in inner)
    elif dataclasses.is_dataclass(inner):
        what = f"a mapping with the keys {', '.join(field.name for field in dataclasses.fields(inner))}"
    elif typing.get_origin(inner) is tuple:
        what = "a list of strings"
    else:
        what = _TYPE_NAMES[inner]
    return what if inner is hint else f"null or {what}"
