"""The game driver: one game from a seed (`play_game`), many in rounds (`play_batch`), with real MEDEC seeds,
a tiny Hugging Face model and real judges; and the transformers generator.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest
from spec_names import GAME_MD_METRICS

from medical_team.common.vocab import Category, Role
from medical_team.data.medec import VALIDATION_CSV, bundled_csv, load_medec
from medical_team.data.records import GameSeed
from medical_team.data.seeds import build_seeds
from medical_team.game.batch import GameBatch, play_batch
from medical_team.game.cot import parse_response
from medical_team.game.driver import PlayedGame, Reply, play_game
from medical_team.game.hf_generator import HFGenerator, SamplingSettings
from medical_team.game.judging import JudgeRequest, JudgeVerdict
from medical_team.game.prompts import Message, assessor_messages, attacker_messages, prompt_role
from medical_team.game.rewards import RewardConfig
from medical_team.game.settle import GameConfig
from medical_team.judge.backends import Runtime, build_judge
from medical_team.judge.rules import RulesJudge
from medical_team.judge.settings import packaged_judge_settings


@pytest.fixture(scope="module")
def seeds() -> list[GameSeed]:
    """Four real MEDEC validation seeds of each category (16 games)."""
    all_seeds = build_seeds(load_medec(bundled_csv(VALIDATION_CSV)).notes, seed=0)
    picked = [s for c in Category for s in [s for s in all_seeds if s.category is c][:4]]
    assert len(picked) == 16
    return picked


class RecordingGenerator:
    """Wraps a generator and keeps every prompt it was asked to continue."""

    def __init__(self, inner: HFGenerator) -> None:
        self.inner = inner
        self.prompts: list[list[Message]] = []

    def generate(self, prompts: Sequence[list[Message]]) -> list[str]:
        """Record, then generate with the wrapped model."""
        self.prompts += list(prompts)
        return self.inner.generate(prompts)


class CopyingPolicy:
    """A deterministic policy: the attacker returns the note unchanged, the assessor always says ERROR."""

    def generate(self, prompts: Sequence[list[Message]]) -> list[str]:
        """Compliant responses built from each prompt's clinical note."""
        out = []
        for messages in prompts:
            note = messages[-1]["content"].split("Clinical note:\n", 1)[1]
            attacker = "Attacker" in messages[0]["content"]
            answer = note if attacker else "verdict: ERROR\nsentence: none"
            out.append(f"I keep it as it is. </think> <answer>\n{answer}\n</answer>")
        return out


class RecordingJudge:
    """The rules judge, keeping the batch size of every call."""

    def __init__(self) -> None:
        self.inner = RulesJudge()
        self.calls: list[int] = []

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """Record, then judge with the rules."""
        self.calls.append(len(requests))
        return self.inner.judge(requests)


def check_batch(batch: GameBatch, seeds: list[GameSeed]) -> None:
    """Invariants of every played batch."""
    assert set(GAME_MD_METRICS) <= set(batch.metrics)
    assert [g.seed for g in batch.games] == seeds
    for game in batch.games:
        attack, assess = game.turn(Role.ATTACKER), game.turn(Role.ASSESSOR)
        assert game.turns[-1] is assess
        if game.seed.category.adversarial:
            assert attack is not None and attack.messages == attacker_messages(game.seed)
            assert game.note == parse_response(attack.response).answer == attack.answer
            assert game.outcome.judge_reason != "data label"
        else:
            assert attack is None and game.outcome.judge_reason == "data label" and game.note == game.seed.text
        assert assess.messages == assessor_messages(game.note)
        assert game.outcome.category is game.seed.category and game.outcome.note_id == game.seed.note_id
        has_attacker_sample = game.seed.category.adversarial and not game.outcome.dropped
        assert (game.outcome.reward(Role.ATTACKER) is not None) is has_attacker_sample
        assert (game.outcome.reward(Role.ASSESSOR) is not None) is (not game.outcome.dropped)


@pytest.mark.slow
def test_tiny_model_plays_sixteen_games_with_the_rules_judge(tiny_qwen2_dir: Path, seeds: list[GameSeed]) -> None:
    generator = RecordingGenerator(
        HFGenerator.from_pretrained(str(tiny_qwen2_dir), SamplingSettings(max_new_tokens=24))
    )
    batch = play_batch(seeds, generator, RulesJudge())
    check_batch(batch, seeds)
    assert len(generator.prompts) == 8 + 16  # attacker prompts, then one assessor prompt per game
    assert batch.metrics["game/games"] == 16 and batch.metrics["judge/calls"] == 8
    assert all(batch.metrics[f"game/count/{c.value}"] == 4 for c in Category)
    # a random model breaks the format: both roles are punished for it
    assert batch.metrics["assessor/format_violation_rate"] == 1.0
    rewards = [game.outcome.reward(role) for game in batch.games for role in Role]
    assert all(reward <= 0 for reward in rewards if reward is not None)


@pytest.mark.slow
def test_tiny_model_judge_cannot_parse_so_games_tie_and_are_removed(
    tiny_qwen2_dir: Path, seeds: list[GameSeed]
) -> None:
    settings = packaged_judge_settings(backend="hf", model=str(tiny_qwen2_dir), serve={"max_tokens": 16})
    judge = build_judge(settings, Runtime(dtype="float32"))
    generator = HFGenerator.from_pretrained(str(tiny_qwen2_dir), SamplingSettings(max_new_tokens=16))
    batch = play_batch(seeds, generator, judge)
    check_batch(batch, seeds)
    adversarial = [g for g in batch.games if g.seed.category.adversarial]
    ties = [g for g in adversarial if g.outcome.tie]
    # a random judge writes no parseable verdict; only rule-settled games (e.g. empty rewrites) escape a tie
    assert all(g.outcome.judge_reason.startswith("rule:") for g in adversarial if not g.outcome.tie)
    assert ties and all(g.outcome.dropped for g in ties) and batch.metrics["game/ties_removed"] == len(ties)
    assert batch.metrics["game/tie_rate"] == len(ties) / 16
    assert batch.metrics["judge/parse_error_rate"] == sum(g.outcome.judge_parse_error for g in adversarial) / 8
    assert batch.metrics["judge/latency_s"] > 0


def test_copied_rewrites_are_settled_by_the_rules_and_scored(seeds: list[GameSeed]) -> None:
    batch = play_batch(seeds, CopyingPolicy(), RulesJudge(), GameConfig(RewardConfig(localisation_bonus=1.0)))
    check_batch(batch, seeds)
    by_category = {c: [g for g in batch.games if g.seed.category is c] for c in Category}
    for game in batch.games:  # the attacker's reasoning never reaches the assessor
        assert "I keep it as it is" not in game.turn(Role.ASSESSOR).messages[-1]["content"]
    for game in by_category[Category.ADVERSARIAL_HARMFUL]:
        # copying an error note keeps the error: faithful; the assessor says ERROR and is right
        assert game.outcome.truth.value == "error" and game.outcome.faithful
        assert game.outcome.attacker_terms == {"format": 0.0, "outcome": -1.0, "faithfulness": 0.5}
    for game in by_category[Category.ADVERSARIAL_BENIGN]:
        # a copied clean note injects nothing: not faithful, and the ERROR verdict is a false alarm
        assert game.outcome.truth.value == "no_error" and not game.outcome.faithful
        assert game.outcome.attacker_terms == {"format": 0.0, "outcome": 1.0, "faithfulness": -0.5}
    assert batch.metrics["assessor/accuracy/vanilla_harmful"] == 1.0
    assert batch.metrics["assessor/false_alarm_rate"] == 1.0
    assert batch.metrics["attacker/success_rate/adversarial_benign"] == 1.0
    assert batch.metrics["assessor/format_violation_rate"] == 0.0
    assert batch.metrics["assessor/sentence_accuracy"] == 0.0  # it quoted "none"


def test_a_batch_is_three_calls_attackers_and_vanilla_assessors_then_the_other_assessors_then_the_judge(
    seeds: list[GameSeed],
) -> None:
    calls: list[list[str]] = []

    class Counting(CopyingPolicy):
        def generate(self, prompts: Sequence[list[Message]]) -> list[str]:
            calls.append([prompt_role(messages).value for messages in prompts])
            return super().generate(prompts)

    judge = RecordingJudge()
    play_batch(seeds, Counting(), judge)
    first_turns = ["attacker" if seed.category.adversarial else "assessor" for seed in seeds]
    assert calls == [first_turns, ["assessor"] * 8]  # in seed order within each call
    assert judge.calls == [8]


def test_a_batch_plays_each_game_as_the_driver_plays_it_alone(seeds: list[GameSeed]) -> None:
    """The batch only groups the calls: every game equals the one `play_game` plays by itself."""
    policy, judge = CopyingPolicy(), RulesJudge()

    async def generate(role: Role, messages: list[Message]) -> Reply:
        assert prompt_role(messages) is role
        return Reply(policy.generate([messages])[0])

    async def judge_one(request: JudgeRequest) -> JudgeVerdict:
        return judge.judge([request])[0]

    async def alone() -> list[PlayedGame[Reply]]:
        return [await play_game(seed, generate, judge_one) for seed in seeds]

    assert play_batch(seeds, policy, judge).games == asyncio.run(alone())


def test_a_vanilla_game_needs_no_judge_and_an_adversarial_one_does(seeds: list[GameSeed]) -> None:
    async def generate(role: Role, messages: list[Message]) -> Reply:
        return Reply(CopyingPolicy().generate([messages])[0])

    vanilla = next(s for s in seeds if not s.category.adversarial)
    game = asyncio.run(play_game(vanilla, generate))
    assert [t.role for t in game.turns] == [Role.ASSESSOR] and game.outcome.reward(Role.ASSESSOR) is not None
    adversarial = next(s for s in seeds if s.category.adversarial)
    with pytest.raises(
        ValueError, match=f"seed {adversarial.note_id} is adversarial_.*: adversarial games need a judge"
    ):
        asyncio.run(play_game(adversarial, generate))


def test_the_trace_measures_each_turn_with_the_callers_length(seeds: list[GameSeed]) -> None:
    batch = play_batch(seeds, CopyingPolicy(), RulesJudge())
    for game in batch.games:
        trace = game.trace(lambda turn: len(turn.response), response_cap=99)
        assert trace.seed_text == game.seed.text and trace.response_cap == 99
        assert trace.assessor_tokens == len(game.turn(Role.ASSESSOR).response)
        assert trace.assessor_response == game.turn(Role.ASSESSOR).response
        if game.seed.category.adversarial:
            assert trace.rewrite == game.note and trace.attacker_tokens == len(game.turn(Role.ATTACKER).response)
        else:
            assert trace.rewrite is None and trace.attacker_tokens is None


def test_a_generator_that_drops_a_response_fails_every_waiting_game(seeds: list[GameSeed]) -> None:
    class Short(CopyingPolicy):
        def generate(self, prompts: Sequence[list[Message]]) -> list[str]:
            return super().generate(prompts)[:-1]

    with pytest.raises(RuntimeError, match="Short returned 15 texts for 16 prompts"):
        play_batch(seeds, Short(), RulesJudge())


def test_empty_batch_still_reports_every_metric() -> None:
    batch = play_batch([], CopyingPolicy(), RulesJudge())
    assert batch.games == [] and set(GAME_MD_METRICS) <= set(batch.metrics)


def test_greedy_batched_generation_equals_one_at_a_time(tiny_qwen2_dir: Path) -> None:
    settings = SamplingSettings(max_new_tokens=12, do_sample=False, batch_size=4)
    generator = HFGenerator.from_pretrained(str(tiny_qwen2_dir), settings)
    prompts = [assessor_messages("Short."), assessor_messages("A longer note: the patient has fever and a cough.")]
    assert generator.generate(prompts) == [generator.generate([p])[0] for p in prompts]


@pytest.mark.slow
def test_sampling_is_reproducible_with_a_seed(tiny_qwen2_dir: Path, tiny_model_dir: Path) -> None:
    prompts = [assessor_messages("The patient has a rash.")] * 3
    for path in (tiny_qwen2_dir, tiny_model_dir):
        first = HFGenerator.from_pretrained(str(path), SamplingSettings(max_new_tokens=12, seed=7)).generate(prompts)
        again = HFGenerator.from_pretrained(str(path), SamplingSettings(max_new_tokens=12, seed=7)).generate(prompts)
        assert first == again and all(isinstance(t, str) for t in first)


def test_prompt_ends_with_the_thinking_prefix(tiny_qwen2_dir: Path) -> None:
    generator = HFGenerator.from_pretrained(str(tiny_qwen2_dir))
    rendered = generator.render(assessor_messages("Note."))
    assert rendered.endswith("<|im_start|>assistant\nLet's think step by step.\n<think> ")


@pytest.mark.parametrize(
    ("field", "value"), [("max_new_tokens", 0), ("temperature", 0.0), ("top_p", 1.5), ("batch_size", 0)]
)
def test_bad_sampling_settings_name_the_field(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        SamplingSettings(**{field: value})


def test_native_thinking_ends_the_prompt_with_the_model_opener(tiny_model_dir: Path) -> None:
    generator = HFGenerator.from_pretrained(str(tiny_model_dir), native_thinking=True)
    rendered = generator.render(assessor_messages("Note."))
    assert rendered.endswith("<|im_start|>assistant\n<think>\n") and "Let's think step by step" not in rendered
