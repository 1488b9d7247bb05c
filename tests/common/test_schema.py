"""medical_team/common/schema.py: a section bound to typed dataclasses, every problem named at once, rules in one place."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

import pytest

from medical_team.common.errors import UserInputError
from medical_team.common.schema import Rules, bind, check


class Colour(str, Enum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Inner:
    port: int = check(lambda p: 0 < p < 65536, "a port number (1-65535)")
    args: tuple[str, ...]


@dataclass(frozen=True)
class Outer(Rules):
    name: str
    colour: Colour
    share: float = check(lambda x: 0 < x < 1, "a number in (0, 1)")
    limit: float | None = check(lambda x: x > 0, "a number > 0")
    eager: bool
    inner: Inner

    @staticmethod
    def problems(values: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
        if values.get("colour") is Colour.RED and values.get("limit") is None:
            yield "limit", "required when colour is red"


GOOD = {"name": "x", "colour": "blue", "share": 0.5, "limit": None, "eager": False, "inner": {"port": 1, "args": []}}


def problems(values: Mapping[str, Any]) -> list[str]:
    """The problem lines of binding `values` to Outer under `top`."""
    with pytest.raises(UserInputError) as caught:
        bind(Outer, values, "top", "invalid")
    return str(caught.value).splitlines()[1:]


def test_a_good_section_binds_with_types_converted() -> None:
    bound = bind(Outer, {**GOOD, "share": 1 - 0.5, "limit": 3}, "top", "invalid")
    assert bound.colour is Colour.BLUE and bound.limit == 3.0 and isinstance(bound.limit, float)
    assert bound.inner == Inner(port=1, args=())


def test_every_problem_names_key_value_and_what_is_expected() -> None:
    bad = {**GOOD, "colour": "green", "share": True, "limit": -1, "eager": "yes", "inner": {"port": 0, "args": "a"}}
    del bad["name"]
    bad["nmae"] = "x"
    assert [line.strip() for line in problems(bad)] == [
        "top.nmae: unknown key; did you mean top.name? known keys: colour, eager, inner, limit, name, share",
        "top.name: missing; expected a string",
        "top.colour: 'green' must be one of red, blue",
        "top.share: True must be a number in (0, 1)",
        "top.limit: -1 must be null or a number > 0",
        "top.eager: 'yes' must be true or false",
        "top.inner.port: 0 must be a port number (1-65535)",
        "top.inner.args: 'a' must be a list of strings",
    ]


def test_cross_field_rules_run_beside_field_problems_and_on_direct_construction() -> None:
    assert [line.strip() for line in problems({**GOOD, "colour": "red", "share": 2})] == [
        "top.share: 2 must be a number in (0, 1)",
        "top.limit: required when colour is red",
    ]
    with pytest.raises(ValueError, match="limit: required when colour is red"):
        Outer("x", Colour.RED, 0.5, None, False, Inner(1, ()))


def test_a_section_that_is_not_a_mapping_is_named() -> None:
    assert problems({**GOOD, "inner": [1]}) == ["  top.inner: [1] must be a mapping with the keys port, args"]
