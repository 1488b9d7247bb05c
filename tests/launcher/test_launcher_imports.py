"""`medplay train`'s launcher reaches `ray.init` without importing torch, transformers or verl.

The launcher composes and plans the run, checks its inputs (the prompts' and the judge's token counts with the light
tokenizer: models/light_tokenizer.py), records it and starts Ray; verl is imported only in Ray's processes, the task
runner's first (launcher/ppo_run.py, task_runner/actor.py). Here `medplay train profile=cpu-smoke` runs in a fresh
process on the tiny model until `ray.init`, which records the frameworks loaded by then and stops the run.

    .venv/bin/python -m pytest -q tests/launcher/test_launcher_imports.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from medical_team.data.medec import TEST_CSV, VALIDATION_CSV, bundled_csv
from medical_team.game.dataset import ConvertOptions, convert_medec

# Modules `import verl` brings (verl, tensordict, torch and torch._dynamo, transformers) and vLLM.
FRAMEWORKS = ("torch", "transformers", "verl", "tensordict", "vllm")
# `medplay train` in this process with `ray.init` recording and stopping it, and vLLM's model-class warm-up (a child
# process of its own, launcher/model_info_warmup.py) started as a no-op.
UNTIL_RAY_INIT = f"""
import json, sys
import ray

class StoppedAtRayInit(Exception):
    pass

def record(**kwargs):
    loaded = sorted(name for name in {FRAMEWORKS!r} if name in sys.modules)
    with open(sys.argv[1], "w") as out:
        json.dump({{"loaded": loaded, "env_vars": sorted(kwargs["runtime_env"]["env_vars"])}}, out)
    raise StoppedAtRayInit

ray.init = record
import medical_team.launcher.model_info_warmup as warmup
warmup.warmup_command = lambda model: [sys.executable, "-c", "pass"]
from medical_team.cli import main
main(["train", *sys.argv[2:]])
"""


@pytest.fixture(scope="module")
def bundled_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("bundled")
    convert_medec([bundled_csv(VALIDATION_CSV)], bundled_csv(TEST_CSV), output, ConvertOptions())
    return output


def test_the_launcher_starts_ray_without_torch_transformers_or_verl(
    tiny_model_dir: Path, bundled_data: Path, tmp_path: Path
) -> None:
    report = tmp_path / "at-ray-init.json"
    overrides = [
        "profile=cpu-smoke",
        f"medplay.output_dir={tmp_path / 'run'}",
        f"medplay.data_dir={bundled_data}",
        f"medplay.model.path={tiny_model_dir}",
        f"medplay.cache_dir={tmp_path / 'cache'}",
        "medplay.watchdog.enabled=false",
        "trainer.total_training_steps=1",
    ]
    result = subprocess.run(
        [sys.executable, "-c", UNTIL_RAY_INIT, str(report), *overrides],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert report.is_file(), result.stdout[-3000:] + result.stderr[-3000:]  # the run reached ray.init
    at_ray_init = json.loads(report.read_text())
    assert at_ray_init["loaded"] == []
    assert "VERL_USE_EXTERNAL_MODULES" in at_ray_init["env_vars"]  # verl's processes load medplay's plugin
    assert "StoppedAtRayInit" in result.stderr  # the run's last line names the stop, nothing before it
