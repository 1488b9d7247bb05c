"""One game per row through verl's real V1 path: agent loop -> worker -> TransferQueue -> replay buffer -> advantages.

The only stand-in is the LLM server (scripted replies); the agent loop, verl's worker post-processing,
TransferQueue, the replay buffer and `_compute_advantage` (KL penalty, estimator) are verl's and ours.
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from pathlib import Path
from typing import Any

import pytest
import torch
from omegaconf import DictConfig
from verl.utils.torch_functional import masked_mean, masked_var
from verl.workers.rollout.replica import TokenOutput

from medical_team.common.vocab import Category, Role
from medical_team.data.medec import load_medec
from medical_team.data.seeds import build_seeds
from medical_team.game import metric_names
from medical_team.game.dataset import game_row
from medical_team.game.prompts import prompt_role

pytestmark = pytest.mark.slow

ASSESSOR_REPLY = "The note reads as consistent. </think> <answer> verdict: NO_ERROR </answer>"
GLOBAL_STEP = 1


class ScriptedLLMServer:
    """Stands in for verl's rollout server: the attacker copies the note with one word changed, the assessor says NO_ERROR."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.replies: dict[tuple[Role, str], str] = {}  # (role, the prompt's note) -> the reply as decoded
        self.seeds: dict[tuple[Role, str], int | None] = {}  # (role, the prompt's note) -> its sampling seed

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict, **_: Any) -> TokenOutput:
        prompt = self.tokenizer.decode(prompt_ids)
        note = prompt.split("Clinical note:\n", 1)[1].split("<|im_end|>", 1)[0]
        role = Role.ATTACKER if "You are the Attacker" in prompt else Role.ASSESSOR
        reply = ASSESSOR_REPLY
        if role is Role.ATTACKER:
            reply = f"Subtler wording. </think> <answer> {note.replace(' the ', ' this ', 1)} </answer>"
        ids = self.tokenizer.encode(reply, add_special_tokens=False)[: sampling_params.get("max_tokens", 10_000)]
        self.replies[role, note] = self.tokenizer.decode(ids, skip_special_tokens=True)
        self.seeds[role, note] = sampling_params.get("seed")
        return TokenOutput(
            token_ids=ids,
            log_probs=[-0.5] * len(ids),
            extra_fields={"min_global_steps": GLOBAL_STEP, "max_global_steps": GLOBAL_STEP},
        )


class ReplayedReplies:
    """A batched game `Generator` answering each prompt with the reply the scripted server gave to the same prompt."""

    def __init__(self, server: ScriptedLLMServer) -> None:
        self.server = server

    def generate(self, prompts: list[list[dict[str, str]]]) -> list[str]:
        """The server's reply to each prompt, keyed by role and note."""
        return [
            self.server.replies[prompt_role(messages), messages[-1]["content"].split("Clinical note:\n", 1)[1]]
            for messages in prompts
        ]


def rows(medec_csv: Path, per_category: int) -> list[dict[str, Any]]:
    """`per_category` game rows of every category from real MEDEC seeds, as `medplay convert` writes them."""
    seeds = build_seeds(load_medec(medec_csv).notes, seed=0)
    chosen = [s for c in Category for s in [s for s in seeds if s.category is c][:per_category]]
    return [game_row(seed, index=i, split="train") for i, seed in enumerate(chosen)]


def with_mode(config: DictConfig, mode: str) -> DictConfig:
    """A copy of the trainer config with `medplay.training_mode` set."""
    config = copy.deepcopy(config)
    config.medplay.training_mode = mode
    return config


async def play(worker: Any, game_rows: list[dict[str, Any]]) -> list[str]:
    """Submit the rows as verl's trainer does and play every game; returns the prompt uids."""
    import transfer_queue as tq

    uids = [str(uuid.uuid4()) for _ in game_rows]
    tags = [{"is_prompt": True, "status": "pending", "global_steps": GLOBAL_STEP} for _ in uids]
    await tq.async_kv_batch_put(keys=uids, partition_id="train", tags=tags)
    sampling = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
    for uid, (index, row) in zip(uids, enumerate(game_rows), strict=True):
        prompt = {
            **row,
            "raw_prompt": row["prompt"],
            "uid": uid,
            "global_steps": GLOBAL_STEP,
            "index": index,
            "agent_name": "medplay_selfplay",
        }
        trajectory = {"step": GLOBAL_STEP, "sample_index": index, "rollout_n": 0, "validate": False}
        await worker._run_prompt(prompt, sampling, trajectory=trajectory)
    return uids


class LedgerView:
    """The worker's settled games as `SelfPlayAgentLoopManager.drain_games` hands them to the trainer, left in the
    worker's ledger for the test to read."""

    def __init__(self, worker: Any) -> None:
        self.worker = worker

    def drain_games(self) -> tuple[list[Any], Any]:
        """Copies of the games the worker settled."""
        from medical_team.run.step_games import StepGame

        records = copy.deepcopy(self.worker.ledger.records)
        return [StepGame.from_record(record) for record in records], self.worker.ledger.judge_stats


def sample_and_compute_advantages(config: DictConfig, count: int, manager: Any) -> tuple[dict[str, Any], Any]:
    """verl's replay buffer samples the step's batch, old/ref log-probs are written, verl computes advantages.

    `manager` answers the trainer's `drain_games` (the step-level reward terms need the step's games). Returns
    the step's metrics and the batch rows as stored after the advantage computation.
    """
    import transfer_queue as tq

    from medical_team.task_runner.trainer import SelfPlayTrainer, sample_metrics

    trainer = SelfPlayTrainer(config)
    trainer.agent_loop_manager = manager
    batch, _ = trainer.replay_buffer.sample(global_steps=GLOBAL_STEP, partition_id="train", batch_size=count)
    lengths = tq.kv_batch_get(keys=batch.keys, partition_id="train", select_fields=["responses"])["responses"]
    sizes = lengths.offsets().diff().tolist()
    generator = torch.Generator().manual_seed(0)
    fields = {
        name: torch.nested.as_nested_tensor([-torch.rand(n, generator=generator) for n in sizes], layout=torch.jagged)
        for name in ("old_log_probs", "ref_log_prob")
    }
    from tensordict import TensorDict

    tq.kv_batch_put(keys=batch.keys, partition_id="train", fields=TensorDict(fields, batch_size=len(sizes)))
    metrics: dict[str, Any] = {}
    trainer._compute_advantage(batch, metrics)
    data = tq.kv_batch_get(
        keys=batch.keys,
        partition_id="train",
        select_fields=[
            "uid",
            "extra_info",
            "rm_scores",
            "advantages",
            "response_mask",
            "extra_fields",
            "responses",
        ],
    )
    metrics.update(sample_metrics(batch))
    tq.kv_clear(keys=batch.keys, partition_id="train")
    return metrics, data


@pytest.fixture()
def make_worker(trainer_config: DictConfig, transfer_queue: None):
    """verl's agent-loop worker class with our overrides, constructed in-process on the scripted server."""
    from medical_team.agent_loop.worker import _SelfPlayAgentLoopWorker

    def build(mode: str) -> Any:
        config = with_mode(trainer_config, mode)
        worker = _SelfPlayAgentLoopWorker(config, None, None, None)
        worker.llm_client = ScriptedLLMServer(worker.tokenizer)
        return worker, config

    return build


def driver_outcomes(worker: Any, config: DictConfig, game_rows: list[dict[str, Any]]) -> list[Any]:
    """The rows' games as `play_batch` settles them with the replies the scripted server gave in training."""
    from medical_team.game import play_batch
    from medical_team.judge.rules import RulesJudge
    from medical_team.run.rows import seed_of_row
    from medical_team.run.settings import settings_from_trainer_config

    seeds = [seed_of_row(row["data_source"], row["extra_info"])[0] for row in game_rows]
    game = settings_from_trainer_config(config).game
    return [g.outcome for g in play_batch(seeds, ReplayedReplies(worker.llm_client), RulesJudge(), game).games]


def test_each_role_keeps_its_own_reward_and_is_whitened_alone(make_worker, medec_csv: Path) -> None:
    worker, config = make_worker("joint")
    game_rows = rows(medec_csv, per_category=2)
    asyncio.run(play(worker, game_rows))
    metrics, data = sample_and_compute_advantages(config, len(game_rows), LedgerView(worker))

    roles = [Role(extra["role"]) for extra in data["extra_fields"]]
    rewards = data["rm_scores"].to_padded_tensor(0.0).sum(dim=1)
    # 4 adversarial games x 2 outputs + 4 vanilla games x 1 output
    assert roles.count(Role.ATTACKER) == 4 and roles.count(Role.ASSESSOR) == 8
    assert metrics["samples/attacker"] == 4 and metrics["samples/assessor"] == 8

    # each row carries exactly its own role's reward as the game API settled it
    from medical_team.game import GameOutcome

    records, judge_stats = worker.ledger.drain()
    assert len(records) == len(game_rows) and judge_stats.requests == 4
    from medical_team.game.step_terms import with_step_terms
    from medical_team.run.settings import settings_from_trainer_config

    outcomes = [GameOutcome.from_record(r) for r in records]
    # the rows carry the games' rewards with the step-level terms the trainer added before the advantages
    stepped = with_step_terms(outcomes, settings_from_trainer_config(config).rewards)
    settled = {(o.note_id, o.category.value): o for o in stepped}
    # given the same replies, the agent loop's games are the games cross-play's `play_batch` plays
    assert driver_outcomes(worker, config, game_rows) == [GameOutcome.from_record(r) for r in records]
    games: dict[str, dict[Role, float]] = {}
    for uid, info, extra, role, reward in zip(
        data["uid"], data["extra_info"], data["extra_fields"], roles, rewards.tolist(), strict=True
    ):
        outcome = settled[(info["note_id"], extra["category"])]
        expected = outcome.attacker_reward if role is Role.ATTACKER else outcome.assessor_reward
        assert reward == pytest.approx(expected)
        games.setdefault(uid.split("_")[0], {})[role] = reward
    adversarial = [game for game in games.values() if Role.ATTACKER in game]
    assert len(adversarial) == 4
    # rules judge: the rewrite realises the intended label (an error), the assessor answers NO_ERROR:
    # attacker 0 (format) + 1 (assessor wrong) + 0.5 (faithful), assessor 0 (format) - 1 (wrong); every answer is
    # compliant and NO_ERROR, so the step-level terms add nothing (no right ERROR answer to earn the balance)
    assert all((game[Role.ATTACKER], game[Role.ASSESSOR]) == (1.5, -1.0) for game in adversarial)

    # the KL is in the actor's loss, not the rewards: the advantages see the game scores alone, each role
    # whitened on its own. The attacker's scores are all 1.5, so it has nothing to learn from this step
    # (a KL penalty in the rewards would have whitened its noise to unit advantages).
    assert "actor/reward_kl_penalty" not in metrics
    advantages = data["advantages"].to_padded_tensor(0.0)
    mask = data["response_mask"].to_padded_tensor(0)
    attacker = [i for i, r in enumerate(roles) if r is Role.ATTACKER]
    assert torch.count_nonzero(advantages[attacker]) == 0
    assessor = [i for i, r in enumerate(roles) if r is Role.ASSESSOR]
    assert masked_mean(advantages[assessor], mask[assessor]).item() == pytest.approx(0.0, abs=1e-4)
    assert masked_var(advantages[assessor], mask[assessor]).item() == pytest.approx(1.0, abs=1e-2)


@pytest.mark.parametrize(
    ("mode", "trained", "absent"),
    [("assessor", Role.ASSESSOR, Role.ATTACKER), ("attacker", Role.ATTACKER, Role.ASSESSOR)],
)
def test_training_mode_keeps_only_its_role_in_the_update_batch(
    make_worker, medec_csv: Path, mode: str, trained: Role, absent: Role
) -> None:
    worker, config = make_worker(mode)
    game_rows = rows(medec_csv, per_category=1)
    asyncio.run(play(worker, game_rows))
    metrics, data = sample_and_compute_advantages(config, len(game_rows), LedgerView(worker))

    roles = {Role(extra["role"]) for extra in data["extra_fields"]}
    assert roles == {trained}
    assert metrics[f"samples/{absent.value}"] == 0 and metrics[f"samples/{trained.value}"] > 0
    # every game was still played and settled, so the step's game metrics see all of them
    from medical_team.game import GameOutcome, game_metrics

    records, stats = worker.ledger.drain()
    assert len(records) == len(game_rows)
    step_metrics = game_metrics([GameOutcome.from_record(r) for r in records], stats)
    assert set(step_metrics) == set(metric_names())
    if mode == "attacker":  # attacker mode plays every row adversarially
        assert step_metrics["judge/calls"] == len(game_rows)


def test_validation_batches_play_the_assessor_alone_on_the_seed(make_worker, medec_csv: Path) -> None:
    import numpy as np
    import transfer_queue as tq
    from verl.utils import tensordict_utils as tu

    worker, _config = make_worker("joint")
    game_rows = rows(medec_csv, per_category=1)
    uids = [str(uuid.uuid4()) for _ in game_rows]
    columns = {
        key: np.array([row[key] for row in game_rows], dtype=object)
        for key in ("data_source", "extra_info", "reward_model")
    }
    columns["raw_prompt"] = np.array([row["prompt"] for row in game_rows], dtype=object)
    columns["uid"] = np.array(uids, dtype=object)
    columns["index"] = np.arange(len(game_rows))
    batch = tu.get_tensordict(columns)
    tu.assign_non_tensor_data(batch, "global_steps", GLOBAL_STEP)
    tu.assign_non_tensor_data(batch, "validate", True)

    async def run() -> None:
        await worker.generate_sequences(batch)
        await asyncio.gather(*list(worker.background_tasks))

    asyncio.run(run())
    keys = [key for key in tq.kv_list("val")["val"] if key not in uids]
    data = tq.kv_batch_get(keys=keys, partition_id="val", select_fields=["extra_fields", "prompts", "extra_info"])
    assert len(keys) == len(game_rows)  # one output per row: no attacker turn in validation
    assert {extra["role"] for extra in data["extra_fields"]} == {Role.ASSESSOR.value}
    assert {extra["category"] for extra in data["extra_fields"]} <= {"vanilla_harmful", "vanilla_benign"}
    for prompt_ids, info in zip(data["prompts"], data["extra_info"], strict=True):
        prompt = worker.tokenizer.decode(prompt_ids.tolist())
        assert "You are the Assessor" in prompt and info["text"][-40:] in prompt
    assert worker.ledger.drain()[0] == []  # validation games are not training metrics
    tq.kv_clear(keys=keys + uids, partition_id="val")


@pytest.mark.parametrize("inverted", [False, True])
def test_learning_probe_replaces_each_roles_reward_and_records_its_behaviour(
    trainer_config: DictConfig, transfer_queue: None, medec_csv: Path, inverted: bool
) -> None:
    from omegaconf import open_dict

    from medical_team.agent_loop.worker import _SelfPlayAgentLoopWorker
    from medical_team.run.learning_probe import shows_behaviour

    config = with_mode(trainer_config, "joint")
    with open_dict(config):
        config.medplay.learning_probe = {"enabled": True, "inverted": inverted}
    worker = _SelfPlayAgentLoopWorker(config, None, None, None)
    worker.llm_client = ScriptedLLMServer(worker.tokenizer)
    game_rows = rows(medec_csv, per_category=1)
    asyncio.run(play(worker, game_rows))
    _metrics, data = sample_and_compute_advantages(config, len(game_rows), LedgerView(worker))

    rewards = data["rm_scores"].to_padded_tensor(0.0).sum(dim=1).tolist()
    observed = []
    for extra, responses, reward in zip(data["extra_fields"], data["responses"], rewards, strict=True):
        role = Role(extra["role"])
        shown = shows_behaviour(role, responses.tolist(), len(worker.tokenizer))
        assert reward == float(shown != inverted)  # the probe's reward, not the game's
        observed.append((role.value, shown))
    assert {role for role, _ in observed} == {"attacker", "assessor"}
    assert sorted(worker.ledger.drain_probe_observations()) == sorted(observed)


@pytest.mark.parametrize("seeded", [False, True])
def test_seeded_sampling_gives_every_turn_its_own_seed_and_the_same_one_in_a_replay(
    trainer_config: DictConfig, transfer_queue: None, medec_csv: Path, seeded: bool
) -> None:
    from omegaconf import open_dict

    from medical_team.agent_loop.worker import _SelfPlayAgentLoopWorker

    config = with_mode(trainer_config, "joint")
    with open_dict(config):
        config.medplay.seeded_sampling = seeded
    game_rows = rows(medec_csv, per_category=1)
    plays = []
    for _ in range(2):
        worker = _SelfPlayAgentLoopWorker(config, None, None, None)
        worker.llm_client = ScriptedLLMServer(worker.tokenizer)
        asyncio.run(play(worker, game_rows))
        sample_and_compute_advantages(config, len(game_rows), LedgerView(worker))
        plays.append(worker.llm_client.seeds)
    first, replay = plays
    assert len(first) == 6  # 2 adversarial games x 2 turns + 2 vanilla games x 1 turn
    if not seeded:
        assert set(first.values()) == {None}  # vLLM's own generator
        return
    assert len(set(first.values())) == len(first)  # every turn its own seed
    assert replay == first  # the same step, rows and turns: the same seeds in another worker


def test_in_row_order_lists_a_batch_by_data_row_whatever_order_the_games_finished(make_worker, medec_csv: Path) -> None:
    import dataclasses

    import transfer_queue as tq

    from medical_team.task_runner.trainer import SelfPlayTrainer, in_row_order

    worker, config = make_worker("joint")
    game_rows = rows(medec_csv, per_category=1)
    asyncio.run(play(worker, game_rows))
    batch, _ = SelfPlayTrainer(config).replay_buffer.sample(
        global_steps=GLOBAL_STEP, partition_id="train", batch_size=len(game_rows)
    )
    reversed_batch = dataclasses.replace(batch, keys=batch.keys[::-1], tags=batch.tags[::-1])
    ordered = in_row_order(batch)
    assert in_row_order(reversed_batch).keys == ordered.keys and sorted(ordered.keys) == sorted(batch.keys)
    index = tq.kv_batch_get(keys=ordered.keys, partition_id="train", select_fields=["index"])["index"]
    indices = [int(getattr(i, "data", i)) for i in index]
    assert indices == sorted(indices) and len(indices) == 6 and len(set(indices)) == 4  # adversarial: two outputs
    assert [dict(tag) for tag in ordered.tags] == [dict(batch.tags[batch.keys.index(k)]) for k in ordered.keys]
    tq.kv_clear(keys=batch.keys, partition_id="train")
