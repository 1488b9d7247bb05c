"""The judge-backend registry (medical_team/judge_kinds.py) is the one place a backend's name is looked at."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

import medical_team
from medical_team.errors import UserInputError
from medical_team.judge.backends import BUILDERS
from medical_team.judge.settings import JudgeSettings, packaged_judge_settings
from medical_team.judge_kinds import AUDITABLE_BACKENDS, BACKEND_KINDS, LOCAL_BACKENDS, backend_kind
from medical_team.launcher.judge_run import check_judge

PACKAGE = Path(medical_team.__file__).resolve().parent
# A judge backend's name compared with a literal: `settings.backend == "vllm"`, `judge.backend in (...)`, and so on.
COMPARISON = re.compile(r"""\.backend\b\s*(==|!=|\bin\b|\bnot in\b)|judge\.backend["']\)\s*(==|!=)""")


def test_every_backend_has_a_builder_and_no_builder_lacks_a_backend() -> None:
    assert set(BUILDERS) == set(BACKEND_KINDS)


def test_no_module_but_the_registry_compares_a_judge_backends_name() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if COMPARISON.search(line)
    ]
    assert not found, found


def test_an_unknown_backend_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown judge backend 'gpt'; choose one of rules, vllm, hf, openai, http"):
        backend_kind("gpt")


@pytest.mark.parametrize("name", [name for name, kind in BACKEND_KINDS.items() if kind.needs])
def test_each_backends_needed_field_is_named_when_missing(name: str) -> None:
    kind = BACKEND_KINDS[name]
    message = rf"medplay\.judge\.{kind.needs[0]}'?: .*required when judge\.backend is {name}"
    if kind.behind_judge_server:
        # A judge server's URL may come later (the container's pipeline sets it): the run plan asks for it.
        with pytest.raises(UserInputError, match=message):
            check_judge(packaged_judge_settings(backend=name, model=None, url=None))
    else:
        with pytest.raises(UserInputError, match=message):
            packaged_judge_settings(backend=name, model=None, url=None)


def test_what_each_backend_is() -> None:
    assert [name for name, kind in BACKEND_KINDS.items() if kind.served_here] == ["vllm"]
    assert [name for name, kind in BACKEND_KINDS.items() if not kind.judged_by_model] == ["rules"]
    assert LOCAL_BACKENDS == ("rules", "hf", "openai")
    assert AUDITABLE_BACKENDS == ("rules", "hf", "openai", "http")
    assert backend_kind("openai").describe({"url": "http://h/v1", "model": "m"}) == "openai http://h/v1 m"


def test_the_judge_has_one_address_field() -> None:
    addresses = [field.name for field in dataclasses.fields(JudgeSettings) if "url" in field.name]
    assert addresses == ["url"]
    assert {field for kind in BACKEND_KINDS.values() for field in kind.needs} == {"url", "model"}


def test_the_cli_tells_the_pipeline_where_each_backend_judges() -> None:
    medplay = Path(sys.executable).with_name("medplay")
    where = {
        name: subprocess.run([medplay, "judge", "kind", name], capture_output=True, text=True, check=True).stdout
        for name in BACKEND_KINDS
    }
    assert where == {
        "rules": "in-process\n", "vllm": "served-here\n", "hf": "in-process\n", "openai": "in-process\n",
        "http": "judge-server\n",
    }  # fmt: skip
