"""Registers medplay's pieces with verl: agent loops, the per-role estimator, the self-play trainer.

verl imports it in every process when `VERL_USE_EXTERNAL_MODULES` names it
(`VERL_USE_EXTERNAL_MODULES=medical_team.verl_ext.plugin`); importing registers, and in a worker that
holds a GPU applies `medplay.emulate_gpu_gib`'s memory cap (medical_team/hardware/gpu_cap.py); tests
inject an out-of-memory error through `MEDPLAY_INJECT_OOM` (medical_team/verl_ext/oom_injection.py).
"""

from medical_team.hardware.gpu_cap import cap_this_worker
from medical_team.verl_ext import advantage, agent_loop, trainer
from medical_team.verl_ext.oom_injection import inject_in_this_process

cap_this_worker()
inject_in_this_process()  # tests only: $MEDPLAY_INJECT_OOM

__all__ = ["advantage", "agent_loop", "trainer"]
