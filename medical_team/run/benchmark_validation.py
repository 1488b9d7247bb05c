"""verl's side of the validation on the MEDEC benchmark: how it sampled, which file it read, what it logs.

With `data.val_files` set to the `benchmark.parquet` that `medplay convert` writes, verl's validation plays the
assessor alone on each benchmark note (the `medplay_assessor` agent loop: the benchmark row's seed as a vanilla
game, so `medplay eval`'s assessor prompt) with the rollout's `val_kwargs` (greedy unless changed). The workers
keep each note's response (`drain_benchmark_answers`); after each validation the trainer writes them, with what
this module says of how they were made, to `<medplay.validation_dir>/step_<N>/`
(`medical_team.run_folder.benchmark_answers`), where `medplay eval --responses` scores them with `medplay eval`'s own code.
"""

from __future__ import annotations

from typing import Any

from medical_team.common.vocab import BENCHMARK_DATA_SOURCE

# verl's name for the share of benchmark notes the validation's reward function (medical_team/agent_loop/reward_fn.py) scored correct
BENCHMARK_ACCURACY_METRIC = f"val-core/{BENCHMARK_DATA_SOURCE}/acc/mean@1"


def decoding_of(val_kwargs: Any) -> str:
    """How verl's validation sampled: `greedy`, or the temperature and nucleus it sampled with."""
    if not val_kwargs.get("do_sample", False) or float(val_kwargs.get("temperature", 0)) == 0:
        return "greedy"
    return f"sampled (temperature {val_kwargs.temperature}, top_p {val_kwargs.top_p}, top_k {val_kwargs.top_k})"


def benchmark_file(val_files: Any) -> str:
    """The one benchmark parquet of `data.val_files` (a path or a one-item list)."""
    files = [val_files] if isinstance(val_files, str) else list(val_files)
    if len(files) != 1:
        raise ValueError(f"validation on the benchmark reads one file; data.val_files names {len(files)}")
    return str(files[0])
