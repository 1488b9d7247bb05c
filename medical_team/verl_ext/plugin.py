"""Registers medplay's pieces with verl: agent loops, the per-role estimator, the self-play trainer.

verl imports it in every process when `VERL_USE_EXTERNAL_MODULES` names it
(`VERL_USE_EXTERNAL_MODULES=medical_team.verl_ext.plugin`); importing registers, nothing else runs.
"""

from medical_team.verl_ext import advantage, agent_loop, trainer

__all__ = ["advantage", "agent_loop", "trainer"]
