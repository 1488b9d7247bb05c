"""Registers medplay's pieces with verl: agent loops, the per-role estimator, the self-play trainer.

verl imports it in every process when `VERL_USE_EXTERNAL_MODULES` names it
(`VERL_USE_EXTERNAL_MODULES=medical_team.verl_ext.plugin`); importing registers, and in a worker that
holds a GPU applies `medplay.emulate_gpu_gib`'s memory cap (medical_team/verl_ext/gpu_cap.py).
"""

from medical_team.verl_ext import advantage, agent_loop, trainer
from medical_team.verl_ext.gpu_cap import cap_this_worker

cap_this_worker()

__all__ = ["advantage", "agent_loop", "trainer"]
