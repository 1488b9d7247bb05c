"""A CUDA out-of-memory anywhere in a run, turned into one message: the phase, verl's memory figures, the knobs.

torch raises `torch.OutOfMemoryError` in the process that ran out: an FSDP worker (old_log_prob, ref,
update_actor), verl's vLLM rollout server (rollout), or the judge's vLLM server (which then exits and
leaves the error in its log). Ray carries a worker's error to the launcher inside `RayTaskError`s; the
phase is the worker method in the remote traceback (verl's `ActorRolloutRefWorker` methods and the
vLLM server's `generate`, a verl contact checked by tests/launcher/failures/test_out_of_memory.py). The memory
figures are the last ones verl logged in the run log ("memory allocated (GB): ..."), beside torch's own
"Tried to allocate ..." line.

Tests make a phase run out of memory for real with `MEDPLAY_INJECT_OOM` (medical_team/run/oom_injection.py).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from medical_team.common.errors import UserInputError
from medical_team.run.failures import NO_TRAJECTORIES, JudgeServerError
from medical_team.run.oom_injection import JUDGE_SERVER
from medical_team.run.step_phases import PHASE_METHODS
from medical_team.run_folder.metrics_records import read_step_records

PHASES = (*PHASE_METHODS, JUDGE_SERVER)
# What to turn, per phase (medplay's settings and verl's); `medplay probe --plan` sizes them for a card.
KNOBS = {
    "rollout": "actor_rollout_ref.rollout.gpu_memory_utilization (the rollout's vLLM share), "
    "actor_rollout_ref.rollout.max_num_seqs, data.max_response_length",
    "old_log_prob": "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu (the forward's tokens per "
    "micro-batch: the logits grow with it), data.max_prompt_length + data.max_response_length",
    "ref": "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu, actor_rollout_ref.ref.fsdp_config.param_offload=true",
    "update_actor": "actor_rollout_ref.actor.ppo_max_token_len_per_gpu (tokens per training micro-batch), "
    "actor_rollout_ref.model.enable_gradient_checkpointing=true, "
    "actor_rollout_ref.actor.fsdp_config.optimizer_offload=true, a LoRA profile (24g)",
    JUDGE_SERVER: "medplay.judge.serve.gpu_memory_utilization (the judge's share), medplay.judge.serve.max_model_len, "
    "medplay.judge.serve.max_num_seqs, or a remote judge (medplay.judge.backend=openai)",
}
# verl's memory lines (verl/utils/profiler/performance.py): "After FSDP, memory allocated (GB): 15.07, memory reserved ...".
VERL_MEMORY_LINE = re.compile(
    r"(?:(?:Before|After) [^,\n]*, )?memory allocated \(GB\): [\d.]+, memory reserved \(GB\): [\d.]+[^\n]*"
)
JUDGE_LOG = re.compile(r"its log: (\S+)")
# How an agent-loop worker logs a generation that ran out of memory in verl's vLLM server.
ROLLOUT_FAILURE = re.compile(r"RayTaskError\(OutOfMemoryError\): \S*vLLMHttpServer\.generate")
TORCH_OOM_TEXT = re.compile(r"CUDA out of memory[^\n]*|(?<=torch\.OutOfMemoryError: )[^\n]+")


class RunOutOfMemoryError(RuntimeError):
    """The run ran out of memory: GPU (a phase's torch out-of-memory) or host RAM (Ray's memory monitor)."""


class OutOfGpuMemoryError(RunOutOfMemoryError):
    """The run ran out of GPU memory in `phase`; the message names the figures and the knobs."""

    def __init__(
        self, phase: str, detail: str, verl_figures: str | None, checkpoint: str | None, label: str | None = None
    ) -> None:
        self.phase = phase
        self.label = label or phase  # how the message names the phase (the judge's: its start-up or serving)
        figures = f"; verl's last memory figures: {verl_figures}" if verl_figures else ""
        kept = f"; the last checkpoint is intact: {checkpoint}" if checkpoint else "; no checkpoint was saved yet"
        knobs = KNOBS.get(phase) or "; ".join(KNOBS.values())
        super().__init__(
            f"out of GPU memory in {self.label}: {detail}{figures}; turn down {knobs} "
            f"(`medplay probe --plan` sizes them for this GPU; docs/troubleshooting.md){kept}"
        )


class OutOfHostMemoryError(RunOutOfMemoryError):
    """Ray's memory monitor killed workers because the host's RAM ran short; the message says what to do."""

    def __init__(self, detail: str, checkpoint: str | None) -> None:
        kept = f"; the last checkpoint is intact: {checkpoint}" if checkpoint else "; no checkpoint was saved yet"
        super().__init__(
            f"out of host memory: {detail}; other processes on this host share its RAM: stop them, or lower "
            "data.train_batch_size, actor_rollout_ref.rollout.agent.num_workers and the offloads "
            f"(docs/troubleshooting.md, Out of memory (host RAM)){kept}"
        )


def _chain(error: BaseException) -> list[BaseException]:
    """The error and every error behind it (Ray's `.cause`, Python's __cause__/__context__), each once."""
    seen, pending, found = set(), [error], []
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        found.append(current)
        pending += [getattr(current, "cause", None), current.__cause__, current.__context__]
    return found


def _is_ray_host_oom(error: BaseException) -> bool:
    """Ray's own `OutOfMemoryError`: its memory monitor killed a worker for the host's RAM (not torch's error)."""
    return type(error).__name__ == "OutOfMemoryError" and type(error).__module__ == "ray.exceptions"


def _is_torch_oom(error: BaseException) -> bool:
    """torch's out-of-memory error, or a Ray error standing for one raised in another process."""
    if _is_ray_host_oom(error):
        return False
    # A torch error in this process means torch is imported here: the launcher, which imports no torch, is not made to.
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(error, torch.OutOfMemoryError):
        return True
    return type(error).__name__ == "OutOfMemoryError"


def phase_of(error: BaseException) -> str | None:
    """The phase whose worker method raised: the innermost phase method named in the chain's remote tracebacks."""
    text = "\n".join(str(item) for item in _chain(error))
    last, phase = -1, None
    for name, method in PHASE_METHODS.items():
        for match in re.finditer(rf"\b{method}\b", text):
            if match.start() > last:
                last, phase = match.start(), name
    return phase


def verl_memory_figures(log_file: Path | None, metrics_file: Path | None) -> str | None:
    """The last memory line verl logged in the run log, and the memory figures of the last step it logged.

    The last step is the file's last record's (a resumed run may log a step below one an earlier run logged).
    """
    parts = []
    if log_file is not None and log_file.is_file():
        found = VERL_MEMORY_LINE.findall(log_file.read_text(errors="replace")[-5_000_000:])
        if found:
            parts.append(found[-1].strip())
    if metrics_file is not None and metrics_file.is_file():
        try:
            records = read_step_records(metrics_file)
        except UserInputError as error:  # the out-of-memory report goes on without the figures
            parts.append(f"no memory figures: {error}")
        else:
            data = records.steps.get(records.last_step, {}) if records.last_step is not None else {}
            shown = {key: value for key, value in data.items() if "memory" in key and isinstance(value, int | float)}
            if shown:
                figures = ", ".join(f"{key} {value:.2f}" for key, value in sorted(shown.items()))
                parts.append(f"step {records.last_step}: {figures}")
    return "; ".join(parts) or None


def _judge_log_oom(error: BaseException) -> str | None:
    """torch's out-of-memory line in the judge server's log, when the error names that log."""
    text = str(error)
    found = TORCH_OOM_TEXT.search(text)
    log = JUDGE_LOG.search(text)
    path = Path(log.group(1).rstrip(":")) if log else None
    if found is None and path is not None and path.is_file():
        found = TORCH_OOM_TEXT.search(path.read_text(errors="replace"))
    return found.group(0) if found else None


def out_of_memory(
    error: BaseException, log_file: Path | None, metrics_file: Path | None, checkpoint: str | None
) -> RunOutOfMemoryError | None:
    """The run's error as a RunOutOfMemoryError when running out of GPU memory or host RAM caused it, else None."""
    chain = _chain(error)
    host = next((item for item in chain if _is_ray_host_oom(item)), None)
    if host is not None:
        return OutOfHostMemoryError(str(host).strip().splitlines()[0][:400].rstrip("."), checkpoint)
    for item in chain:
        if isinstance(item, JudgeServerError) and (line := _judge_log_oom(item)):
            return OutOfGpuMemoryError(JUDGE_SERVER, line, None, checkpoint, label=item.phase)
    ooms = [item for item in chain if _is_torch_oom(item)]
    if not ooms:
        return _failed_rollouts(chain, log_file, metrics_file, checkpoint)
    detail = next((m.group(0) for item in ooms if (m := TORCH_OOM_TEXT.search(str(item)))), str(ooms[-1]))
    figures = verl_memory_figures(log_file, metrics_file)
    return OutOfGpuMemoryError(phase_of(error) or "an unknown phase", detail.strip()[:400], figures, checkpoint)


def _failed_rollouts(
    chain: list[BaseException], log_file: Path | None, metrics_file: Path | None, checkpoint: str | None
) -> OutOfGpuMemoryError | None:
    """A rollout out-of-memory: verl's agent loops log a failed generation and the step ends without samples.

    verl counts a game whose generation raised as a failed group and later stops with "no materializable
    trajectories"; the out-of-memory itself is only in the agent-loop worker's log lines.
    """
    if log_file is None or not log_file.is_file() or not any(NO_TRAJECTORIES in str(item) for item in chain):
        return None
    text = log_file.read_text(errors="replace")[-5_000_000:]
    failed = ROLLOUT_FAILURE.search(text)
    if failed is None:
        return None
    line = TORCH_OOM_TEXT.search(text, failed.end())
    detail = line.group(0).strip()[:400] if line else "torch.OutOfMemoryError in vLLMHttpServer.generate"
    return OutOfGpuMemoryError("rollout", detail, verl_memory_figures(log_file, metrics_file), checkpoint)
