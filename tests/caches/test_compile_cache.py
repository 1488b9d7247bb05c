"""vLLM's compile cache claimed by one run at a time (medical_team/caches/compile_cache.py), and the plan that carries it.

Run: PYTHONPATH=tests .venv/bin/python -m pytest -q tests/caches/test_compile_cache.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from medical_team.caches.compile_cache import (
    COMPILE_CACHE_ENV,
    claim_compile_cache,
    compiled_entries,
    release_compile_cache,
)
from medical_team.launcher.config.compose import compose_config
from medical_team.launcher.plan.run_plan import compiles, derive_run_plan, planned_config
from medical_team.run.settings import settings_from_trainer_config

# Another run's launcher: holds the folder's lock until its stdin closes.
HOLDER = """
import sys
from pathlib import Path
from medical_team.caches.compile_cache import claim_compile_cache
use = claim_compile_cache(Path(sys.argv[1]))
print(use.kept, flush=True)
sys.stdin.read()
"""


def test_the_first_run_keeps_the_cache_and_a_second_run_beside_it_compiles_without_it(tmp_path: Path) -> None:
    other = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "True"
        beside = claim_compile_cache(tmp_path)
        assert not beside.kept and beside.environment() == {COMPILE_CACHE_ENV: "1"}
        assert "another run is using" in beside.line and str(tmp_path) in beside.line
    finally:
        other.communicate("", timeout=60)
    after = claim_compile_cache(tmp_path)  # the kernel dropped the lock with the other process
    try:
        assert after.kept and after.environment() == {COMPILE_CACHE_ENV: "0"}
        assert "empty; this run's compiled graphs are kept there" in after.line
    finally:
        release_compile_cache(tmp_path)


def test_the_runs_own_setting_decides_without_a_lock(tmp_path: Path) -> None:
    assert not claim_compile_cache(tmp_path, set_by_run="1").kept
    assert claim_compile_cache(tmp_path, set_by_run="0").kept
    assert not (tmp_path / "compile.lock").exists()


def test_compiled_graph_sets_of_every_engine_are_counted(tmp_path: Path) -> None:
    (tmp_path / "vllm" / "torch_compile_cache" / "3f2a" / "rank_0_0").mkdir(parents=True)
    (tmp_path / "vllm" / "torch_compile_cache" / "torch_aot_compile" / "9c1d" / "rank_0_0").mkdir(parents=True)
    (tmp_path / "judge-server" / "vllm" / "torch_compile_cache" / "77aa").mkdir(parents=True)
    assert compiled_entries(tmp_path) == 3
    use = claim_compile_cache(tmp_path)
    try:
        assert "3 compiled graph sets from earlier runs" in use.line
    finally:
        release_compile_cache(tmp_path)


def test_the_plan_puts_the_claim_in_every_workers_environment(tmp_path: Path) -> None:
    composed = compose_config([f"medplay.cache_dir={tmp_path}"])
    use = claim_compile_cache(Path(composed.medplay.cache_dir))
    try:
        plan = derive_run_plan(composed, settings_from_trainer_config(composed), compile_cache=use)
    finally:
        release_compile_cache(Path(composed.medplay.cache_dir))
    planned = planned_config(composed, plan)
    assert planned.ray_kwargs.ray_init.runtime_env.env_vars[COMPILE_CACHE_ENV] == "0"
    assert use.line in plan.lines
    assert COMPILE_CACHE_ENV not in derive_run_plan(composed, settings_from_trainer_config(composed)).changes


def test_only_a_run_whose_engines_may_compile_claims_the_cache(tmp_path: Path) -> None:
    eager = compose_config(["profile=cpu-smoke", f"medplay.output_dir={tmp_path}"])
    assert not compiles(eager, settings_from_trainer_config(eager).judge)
    compiled = compose_config(["profile=80g", "medplay.judge.backend=rules"])
    assert compiles(compiled, settings_from_trainer_config(compiled).judge)

