"""The memory plan's inputs of a checked run config: verl's settings as composed, the judge's from `medplay.judge`.

`medplay train` (kv_caches.py, through the run plan) and `medplay probe --plan` both plan from here, so the
judge's figures are read one way: from its checked settings, never from the raw config.
"""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from medical_team.hardware.memory_plan import MemoryPlan, memory_plan
from medical_team.hardware.plan_inputs import PlanInputs, ServedJudgeInputs, plan_inputs, vllm_quantization
from medical_team.judge.settings import JudgeSettings
from medical_team.models.shape import MEDGEMMA_4B, model_shape


def served_judge_inputs(judge: JudgeSettings) -> ServedJudgeInputs | None:
    """The judge's figures the plan reads when it is served on this card (`vllm`); None otherwise."""
    if not judge.kind.served_here:
        return None
    serve = judge.serve
    return ServedJudgeInputs(
        # The served judge loads its language model only (vLLM's `--language-model-only`): no vision tower.
        shape=model_shape(str(judge.model), MEDGEMMA_4B).language_model,
        share=float(serve.gpu_memory_utilization),
        kv_bytes=serve.kv_cache_memory_bytes,
        quantization=vllm_quantization(serve.extra_args),
        max_model_len=int(serve.max_model_len),
    )


def memory_plan_inputs(config: DictConfig, judge: JudgeSettings) -> PlanInputs:
    """What the memory plan reads from a composed config whose `medplay.judge` section bound to `judge`."""
    return plan_inputs(OmegaConf.to_container(config, resolve=True), served_judge_inputs(judge))


def run_memory_plan(config: DictConfig, judge: JudgeSettings, card_gib: float, judge_beside: bool = True) -> MemoryPlan:
    """The memory plan of a checked config on a card of `card_gib` GiB (a served judge on it unless `judge_beside` is
    false: a GPU of its own)."""
    return memory_plan(memory_plan_inputs(config, judge), card_gib, judge_beside)
