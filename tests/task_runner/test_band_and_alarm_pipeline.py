"""The difficulty band and the collapse alarm inside verl's real V1 path (agent loop -> worker -> TransferQueue -> trainer).

As in test_pipeline.py the only stand-in is the LLM server (scripted replies). The trainer's
`agent_loop_manager` is the in-process worker's own ledger, reached directly instead of through Ray.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig, OmegaConf, open_dict
from test_pipeline import GLOBAL_STEP, play, rows, sample_and_compute_advantages
from verl.workers.rollout.replica import TokenOutput

from medical_team.common.vocab import Role
from medical_team.game import GameOutcome, JudgeStats
from medical_team.game.step_terms import with_step_terms
from medical_team.run.settings import settings_from_trainer_config as settings_of
from medical_team.run.step_games import StepGame

pytestmark = pytest.mark.slow

SAME_REWRITE = "A 54-year-old woman presents with chest pain; aspirin was given and she was discharged home."


class ScriptedLLMServer:
    """The attacker changes one word of the note, or with `degenerate` writes the same note whatever the seed;
    the assessor says ERROR on notes of even length, NO_ERROR on the others."""

    def __init__(self, tokenizer: Any, degenerate: bool) -> None:
        self.tokenizer = tokenizer
        self.degenerate = degenerate

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict, **_: Any) -> TokenOutput:
        prompt = self.tokenizer.decode(prompt_ids)
        note = prompt.split("Clinical note:\n", 1)[1].split("<|im_end|>", 1)[0]
        if "You are the Attacker" in prompt:
            rewrite = SAME_REWRITE if self.degenerate else note.replace(" the ", " this ", 1)
            reply = f"Subtle. </think> <answer> {rewrite} </answer>"
        else:
            reply = f"Hm. </think> <answer> verdict: {'ERROR' if len(note) % 2 == 0 else 'NO_ERROR'} </answer>"
        ids = self.tokenizer.encode(reply, add_special_tokens=False)[: sampling_params.get("max_tokens", 10_000)]
        return TokenOutput(
            token_ids=ids,
            log_probs=[-0.5] * len(ids),
            extra_fields={"min_global_steps": GLOBAL_STEP, "max_global_steps": GLOBAL_STEP},
        )


class LedgerManager:
    """The in-process worker's ledger, answering as `SelfPlayAgentLoopManager` does for its Ray workers."""

    def __init__(self, worker: Any) -> None:
        self.worker = worker

    def drain_games(self) -> tuple[list[StepGame], JudgeStats]:
        """The games the worker settled since the last call."""
        records, stats = self.worker.ledger.drain()
        return [StepGame.from_record(record) for record in records], stats

    def drain_probe_observations(self) -> list[tuple[str, bool]]:
        """The learning probe's observations (none here)."""
        return self.worker.ledger.drain_probe_observations()


def configured(trainer_config: DictConfig, **medplay: Any) -> DictConfig:
    """The trainer config with parts of `medplay:` replaced (a mapping is merged into the section it changes)."""
    config = copy.deepcopy(trainer_config)
    with open_dict(config):
        for key, value in medplay.items():
            config.medplay[key] = OmegaConf.merge(config.medplay[key], value) if isinstance(value, dict) else value
    return config


def worker_for(config: DictConfig, degenerate: bool) -> Any:
    """verl's agent-loop worker with our overrides, in-process, on the scripted server."""
    from medical_team.agent_loop.worker import _SelfPlayAgentLoopWorker

    worker = _SelfPlayAgentLoopWorker(config, None, None, None)
    worker.llm_client = ScriptedLLMServer(worker.tokenizer, degenerate)
    return worker


def test_difficulty_band_outcome_reaches_the_attacker_rows_before_the_advantages(
    trainer_config: DictConfig, transfer_queue: None, medec_csv: Path
) -> None:
    rewards = {"scheme": "difficulty_band", "localisation_bonus": 0.0, "remove_ties": True}
    config = configured(trainer_config, rewards=rewards)
    worker = worker_for(config, degenerate=False)
    game_rows = rows(medec_csv, per_category=3)
    asyncio.run(play(worker, game_rows))
    settled = {  # the games as the worker settled them (no outcome term yet), then with the step's terms, band included
        (o.note_id, o.category.value): o
        for o in with_step_terms(
            [GameOutcome.from_record(r) for r in copy.deepcopy(worker.ledger.records)], settings_of(config).rewards
        )
    }
    _metrics, data = sample_and_compute_advantages(config, len(game_rows), LedgerManager(worker))

    rewards_of_rows = data["rm_scores"].to_padded_tensor(0.0).sum(dim=1).tolist()
    outcome_terms = []
    for info, extra, reward in zip(data["extra_info"], data["extra_fields"], rewards_of_rows, strict=True):
        outcome = settled[(info["note_id"], extra["category"])]
        if extra["role"] == Role.ATTACKER.value:
            assert "outcome" in outcome.attacker_terms
            outcome_terms.append(outcome.attacker_terms["outcome"])
            assert reward == pytest.approx(outcome.attacker_reward)
        else:
            assert reward == pytest.approx(outcome.assessor_reward)
    assert len(outcome_terms) == 6
    assert any(0.0 < term <= 1.0 for term in outcome_terms), outcome_terms  # the assessor was right sometimes


def test_degenerate_attacker_trips_the_alarm_and_stop_ends_the_run_after_the_step(
    trainer_config: DictConfig, transfer_queue: None, medec_csv: Path
) -> None:
    import transfer_queue as tq

    from medical_team.task_runner.trainer import SelfPlayTrainer

    monitors = {"patience": 2, "action": "stop", "alarms": {"max_self_bleu": 0.9}}
    config = configured(trainer_config, monitors=monitors)
    worker = worker_for(config, degenerate=True)
    trainer = SelfPlayTrainer(config)
    trainer.agent_loop_manager = LedgerManager(worker)
    trainer.global_steps, trainer.total_training_steps = 5, 100
    trainer._saved_step = 5  # verl saved this step's checkpoint already: the stop saves nothing more
    for step in (1, 2):
        asyncio.run(play(worker, rows(medec_csv, per_category=2)))
        metrics: dict[str, Any] = {}
        games, _ = trainer.agent_loop_manager.drain_games()
        trainer._observe_monitors(step, [g.outcome for g in games], games, metrics)
        assert [g.trace.rewrite for g in games if g.trace and g.trace.rewrite] == [SAME_REWRITE] * 4
        assert metrics["attacker/self_bleu"] == pytest.approx(1.0)
        assert metrics["alarm/max_self_bleu"] == step
        assert trainer.total_training_steps == (100 if step == 1 else 5)  # the second step fires: the run ends
        leftover = list(tq.kv_list("train").get("train") or [])  # this step's rows: never sampled for training
        if leftover:
            tq.kv_clear(keys=leftover, partition_id="train")
