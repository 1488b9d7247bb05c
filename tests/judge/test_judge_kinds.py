"""The judge-backend registry (medical_team/judge/judge_kinds.py): one entry per backend owns its facts and names its
builder, and it is the one place a backend's name is compared."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import medical_team
from medical_team.common.errors import UserInputError
from medical_team.judge.backends import build_judge, builder_of
from medical_team.judge.judge_kinds import (
    BACKEND_KINDS,
    JUDGE_BACKENDS,
    LOCAL_BACKENDS,
    REACHABLE_BACKENDS,
    BackendKind,
    Where,
    backend_kind,
)
from medical_team.judge.rules import RulesJudge
from medical_team.judge.settings import JudgeSettings, packaged_judge_settings
from medical_team.launcher.judge.judge_run import check_judge

PACKAGE = Path(medical_team.__file__).resolve().parent
REGISTRY = ("judge/judge_kinds.py",)
# Comparisons with a string that spells a backend's name but names something else: (file, expression) -> what.
OTHER_NAMESPACES = {
    ("evaluate/generation.py", "backend == 'vllm'"): "medplay eval's generation backend (--backend)",
    ("launcher/plan/kv_caches.py", "config.actor_rollout_ref.rollout.name != 'vllm'"): "verl's rollout engine",
    ("run/vllm_cpu.py", "distribution_name.lower() != 'vllm'"): "a Python distribution's name",
    ("judge_server/body_limit.py", "scope['type'] != 'http'"): "an ASGI scope's type",
    ("judge_server/access_middleware.py", "scope['type'] != 'http'"): "an ASGI scope's type",
}
COLLECTIONS = ("tuple", "list", "set", "frozenset")


def _holds_a_name(node: ast.AST, aliases: set[str]) -> bool:
    """True for a backend-name literal, a tuple/list/set/dict holding one, or a variable assigned either."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in JUDGE_BACKENDS
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_holds_a_name(element, aliases) for element in node.elts)
    if isinstance(node, ast.Dict):
        return any(key is not None and _holds_a_name(key, aliases) for key in node.keys)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in COLLECTIONS:
        return any(_holds_a_name(argument, aliases) for argument in node.args)
    return isinstance(node, ast.Name) and node.id in aliases


def backend_name_comparisons(source: str) -> list[tuple[int, str]]:
    """(line, expression) of every comparison (==, !=, in, not in, is, match/case) with a judge backend's name."""
    tree = ast.parse(source)
    aliases: set[str] = set()
    for node in ast.walk(tree):  # a name assigned a backend's name, or a collection of them, compares as one
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None and _holds_a_name(node.value, set()):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            aliases.update(target.id for target in targets if isinstance(target, ast.Name))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
            _holds_a_name(side, aliases) for side in (node.left, *node.comparators)
        ):
            found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.match_case) and any(
            isinstance(pattern, ast.MatchValue) and _holds_a_name(pattern.value, aliases)
            for pattern in ast.walk(node.pattern)
        ):
            found.append((node.pattern.lineno, f"case {ast.unparse(node.pattern)}"))
    return found


def _package_comparisons() -> dict[tuple[str, str], int]:
    """Every comparison with a backend's name in the package outside the registry: (file, expression) -> line."""
    return {
        (str(path.relative_to(PACKAGE)), expression): line
        for path in sorted(PACKAGE.rglob("*.py"))
        if str(path.relative_to(PACKAGE)) not in REGISTRY
        for line, expression in backend_name_comparisons(path.read_text(encoding="utf-8"))
    }


def test_the_guard_sees_every_form_of_comparison() -> None:
    source = """
CHOICES = ("openai", "http")
NAME: str = "rules"
def f(args, kind):
    a = args.judge in ("openai", "http")
    b = kind.backend == "vllm"
    c = "hf" != kind
    d = kind not in {"rules", "hf"}
    e = kind in CHOICES
    f = kind is NAME
    g = kind in frozenset(["hf"])
    h = kind in {"http": 1}
    match kind:
        case "rules" | "hf":
            pass
        case ["openai", *rest]:
            pass
    ok = kind == "auto" or kind in ("transformers",)
"""
    found = [expression for _, expression in backend_name_comparisons(source)]
    assert found == [
        "args.judge in ('openai', 'http')", "kind.backend == 'vllm'", "'hf' != kind", "kind not in {'rules', 'hf'}",
        "kind in CHOICES", "kind is NAME", "kind in frozenset(['hf'])", "kind in {'http': 1}",
        "case 'rules' | 'hf'", "case ['openai', *rest]",
    ]  # fmt: skip


def test_no_module_but_the_registry_compares_a_judge_backends_name() -> None:
    found = _package_comparisons()
    unexplained = [f"{file}:{line}: {expression}" for (file, expression), line in found.items()
                   if (file, expression) not in OTHER_NAMESPACES]  # fmt: skip
    assert not unexplained, "ask medical_team/judge/judge_kinds.py (backend_kind) instead: " + "; ".join(unexplained)
    stale = set(OTHER_NAMESPACES) - set(found)
    assert not stale, f"no longer in the package, drop from OTHER_NAMESPACES: {sorted(stale)}"


def test_each_backend_names_a_builder_in_the_judge_layer() -> None:
    for name, kind in BACKEND_KINDS.items():
        builder = builder_of(kind)
        assert builder.__module__.startswith("medical_team.judge."), (name, builder.__module__)
        assert list(inspect.signature(builder).parameters) == ["settings", "runtime"], name
    assert isinstance(build_judge(packaged_judge_settings(backend="rules")), RulesJudge)


def test_an_entry_is_built_by_keyword_only() -> None:
    with pytest.raises(TypeError):
        BackendKind("rules", False, Where.IN_PROCESS, builder="medical_team.judge.backends:rules_judge")  # type: ignore[misc]


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
    assert [name for name, kind in BACKEND_KINDS.items() if kind.loads_a_model_here] == ["hf"]
    assert LOCAL_BACKENDS == ("rules", "hf", "openai")
    assert REACHABLE_BACKENDS == ("rules", "hf", "openai", "http")
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
