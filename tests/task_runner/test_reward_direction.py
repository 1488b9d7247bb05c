"""Which way the shipped reward pushes a policy that cannot tell notes apart: exact expectations, no sampling.

The model of a step (docs/game.md, "Why the reward is built this way"): every note is answered k times; the
assessor says `ERROR` with probability p whatever the note; an `ERROR` answer breaks the format with probability
f, a `NO_ERROR` answer with probability g, either as a *readable* break (text after the answer: the verdict still
reads) or as a *truncation* (no verdict: wrong); a share pi of the notes hold an error. The attacker's model is the
same with "realises its intended label" in place of `ERROR`.

Every answer is settled by the game's own `settle`, the step-level terms by `with_step_terms` (with the shares an
infinitely large step would measure: its expected shares), the advantages by the project's estimator
(`reinforce_plus_plus_per_role`: per-note group baselines, whitening per role). The expected update on the
policy's logit is then the sum, over every composition of a note's k answers and weighted by that composition's
exact probability, of each answer's advantage times d log P(answer) / d logit: (1 - p) for the chosen behaviour,
-p for the other. Whitening shifts every informative row by the same amount (zero here: one-token rows whose group
baselines sum to zero) and scales them by one positive number, so the sign of that sum is the direction of the
expected update and a zero is no push at all.

Against the reward before this design (format ±1 per game, no step-level terms) 21 of these 22 cases failed: "no
push", "push back", "right above wrong" (a right answer with a broken format scored 0, as did a wrong well-formed
one) and every attacker case; only the uneven step's push towards its majority truth held.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from warfarin_seeds import NOTE, seed_of

from medical_team.common.vocab import BenignAttackMode, Category, Label, Role
from medical_team.game import GameConfig, GameOutcome, RewardConfig, RewardScheme, intended_label, settle
from medical_team.game.judging import JudgeVerdict
from medical_team.game.rewards import VERDICT_SHARE_BAND
from medical_team.game.step_terms import REALISED, StepShares, answer_kind, rare_verdict, with_step_terms
from medical_team.task_runner.advantage import compute_per_role_reinforce_plus_plus

K = 4  # answers per note (rollout.n) of an assessor's note
K_ATTACK = 3  # an attack has eight kinds of game: three rewrites per seed keep the enumeration small
RATES = (0.0, 0.25, 0.5)  # format-break rates of each verdict: every gap from 0 to 0.5 in both directions
SHARES = (0.05, 0.15, 0.2, 0.3, 0.5, 0.7, 0.8, 0.85, 0.95)  # p: inside and outside the band
ERROR_NOTE_SHARES = (0.375, 0.4375, 0.5, 0.5625, 0.625)  # pi: even, and the steps around it (0.5625: the GPU run)
EXACT = 1e-12  # float rounding of sums of a few hundred products of numbers near 1


def reply(answer: str, broken: bool) -> str:
    """A response with this answer: compliant, or broken by text after `</answer>` (the answer still reads)."""
    return f"I check the note. </think> <answer> {answer} </answer>" + (" and more" if broken else "")


TRUNCATED = "I check the note. Sentence 2 gives 50 mg of warfarin, which"  # cut at the cap: no tags, no verdict


@dataclass(frozen=True)
class Answer:
    """One kind of answer a note can get: how likely it is, whether it is the behaviour p counts, its settled game."""

    probability: float
    chosen: bool
    outcome: GameOutcome


@functools.cache
def assessor_games(truth: Label, truncation: bool, config: GameConfig) -> tuple[GameOutcome, ...]:
    """A note of this truth answered ERROR, ERROR broken, NO_ERROR, NO_ERROR broken (broken: readable or cut)."""
    note = seed_of(Category.of(truth, adversarial=False))
    texts = []
    for verdict in ("ERROR", "NO_ERROR"):
        texts += [reply(f"verdict: {verdict}", False), TRUNCATED if truncation else reply(f"verdict: {verdict}", True)]
    return tuple(settle(note, None, text, None, config) for text in texts)


def assessor_answers(truth: Label, p: float, f: float, g: float, truncation: bool, config: GameConfig) -> list[Answer]:
    """The kinds of assessor answer a note of this truth gets, with their probabilities."""
    games = assessor_games(truth, truncation, config)
    probabilities = (p * (1 - f), p * f, (1 - p) * (1 - g), (1 - p) * g)
    return [Answer(q, i < 2, game) for i, (q, game) in enumerate(zip(probabilities, games, strict=True))]


def assessor_shares(p: float, f: float, g: float, truncation: bool, config: GameConfig) -> StepShares:
    """What an infinitely large step of this policy measures: each verdict's compliance and the ERROR share."""
    error, _, clean, _ = assessor_games(Label.ERROR, truncation, config)
    readable_error, readable_clean = p * (1 - f if truncation else 1), (1 - p) * (1 - g if truncation else 1)
    return StepShares(
        compliance={
            (Role.ASSESSOR, answer_kind(error, Role.ASSESSOR)): 1.0 if truncation else 1 - f,
            (Role.ASSESSOR, answer_kind(clean, Role.ASSESSOR)): 1.0 if truncation else 1 - g,
        },
        error_share=readable_error / (readable_error + readable_clean),
    )


def compositions(kinds: int, k: int) -> list[tuple[int, ...]]:
    """Every way to spread k answers over the kinds (counts per kind)."""
    return [c for c in itertools.product(range(k + 1), repeat=kinds) if sum(c) == k]


def expected_pushes(
    notes: Sequence[list[Answer]], role: Role, config: RewardConfig, shares: StepShares, p: float, k: int = K
) -> list[float]:
    """Per note, the expected update on the policy's logit from its k answers (all notes share one positive factor)."""
    rows: list[tuple[GameOutcome, str, int, float]] = []  # outcome, uid, note, probability of its group x d log P
    for n, answers in enumerate(notes):
        for g, counts in enumerate(compositions(len(answers), k)):
            probability = float(math.factorial(k))
            for answer, count in zip(answers, counts, strict=True):
                probability *= answer.probability**count / math.factorial(count)
            if probability == 0:
                continue
            for answer, count in zip(answers, counts, strict=True):
                score = (1 - p) if answer.chosen else -p
                rows += [(answer.outcome, f"n{n}g{g}_{role.value}", n, probability * score)] * count
    rewards = [game.reward(role) for game in with_step_terms([row[0] for row in rows], config, shares)]
    advantages, _ = compute_per_role_reinforce_plus_plus(
        torch.tensor(rewards, dtype=torch.float64)[:, None],
        torch.ones(len(rows), 1, dtype=torch.float64),
        config={"gamma": 1.0, "use_kl_in_reward": False},
        index=np.array([row[1] for row in rows], dtype=object),
    )
    pushes = [0.0] * len(notes)
    for advantage, (_, _, note, weight) in zip(advantages[:, 0].tolist(), rows, strict=True):
        pushes[note] += advantage * weight
    return pushes


def assessor_pushes(p: float, f: float, g: float, truncation: bool, scheme: RewardScheme) -> tuple[float, float]:
    """The assessor's expected update on P(ERROR) from an error note and from a clean note."""
    config = GameConfig(RewardConfig(scheme=scheme))
    notes = [assessor_answers(truth, p, f, g, truncation, config) for truth in (Label.ERROR, Label.NO_ERROR)]
    on_error, on_clean = expected_pushes(
        notes, Role.ASSESSOR, config.rewards, assessor_shares(p, f, g, truncation, config), p
    )
    return on_error, on_clean


def assessor_push(p: float, f: float, g: float, pi: float, truncation: bool, scheme: RewardScheme) -> float:
    """The assessor's expected update on P(ERROR) in a step with error-note share pi."""
    on_error, on_clean = assessor_pushes(p, f, g, truncation, scheme)
    return pi * on_error + (1 - pi) * on_clean


GRID = list(itertools.product(SHARES, RATES, RATES))


@pytest.mark.parametrize("scheme", list(RewardScheme))
def test_the_format_gives_no_push_to_either_verdict_on_an_even_step(scheme: RewardScheme) -> None:
    low, high = VERDICT_SHARE_BAND
    for p, f, g in GRID:
        if low <= p <= high:  # readable breaks: the readable share is p
            assert assessor_push(p, f, g, 0.5, False, scheme) == pytest.approx(0.0, abs=EXACT), (p, f, g)


@pytest.mark.parametrize("scheme", list(RewardScheme))
@pytest.mark.parametrize("truncation", [False, True], ids=["readable-breaks", "truncations"])
def test_a_verdict_share_outside_the_band_is_pushed_back(scheme: RewardScheme, truncation: bool) -> None:
    config = GameConfig(RewardConfig(scheme=scheme))
    checked = 0
    for p, f, g in GRID:
        rare = rare_verdict(assessor_shares(p, f, g, truncation, config).error_share)
        if rare is None:
            continue
        on_error, on_clean = assessor_pushes(p, f, g, truncation, scheme)
        for pi in ERROR_NOTE_SHARES:
            push = pi * on_error + (1 - pi) * on_clean
            assert (push > EXACT) if rare is Label.ERROR else (push < -EXACT), (p, f, g, pi, push)
            checked += 1
    assert checked >= len(ERROR_NOTE_SHARES) * 30  # both sides of the band, every break gap


def test_inside_the_band_the_right_verdict_of_an_uneven_step_gains() -> None:
    """With more error notes than clean ones (and no format gap) a blind policy is pushed towards ERROR, and back."""
    for pi, sign in ((0.5625, 1), (0.4375, -1)):
        assert sign * assessor_push(0.5, 0.25, 0.25, pi, False, RewardScheme.GENERAL_SUM) > EXACT


def outcomes_of_every_kind(scheme: RewardScheme, mode: BenignAttackMode) -> list[GameOutcome]:
    """Every decided game of every category: truths, verdicts (readable or not), faithfulness, both formats."""
    config = GameConfig(RewardConfig(scheme=scheme), benign_mode=mode)
    games = []
    for category in Category:
        for truth, verdict, faithful, assessor_broken, attacker_broken in itertools.product(
            Label, ("ERROR", "NO_ERROR", None), (True, False), (True, False), (True, False)
        ):
            if not category.adversarial and (truth is not category.seed_label or not faithful or attacker_broken):
                continue
            answer = TRUNCATED if verdict is None else reply(f"verdict: {verdict}", assessor_broken)
            attack = reply(NOTE, attacker_broken) if category.adversarial else None
            judged = JudgeVerdict(truth is Label.ERROR, faithful) if category.adversarial else None
            games.append(settle(seed_of(category), attack, answer, judged, config))
    return games


@pytest.mark.parametrize("mode", list(BenignAttackMode))
@pytest.mark.parametrize("scheme", list(RewardScheme))
def test_a_right_answer_scores_above_a_wrong_one_whatever_the_format(
    scheme: RewardScheme, mode: BenignAttackMode
) -> None:
    """Per game, and after the step-level terms of steps with every mix of these games' kinds."""
    games = outcomes_of_every_kind(scheme, mode)
    steps = [games] + [games[start::stride] for stride in (2, 3, 5, 7) for start in range(stride)]
    for step in [[g] for g in games] + steps:
        scored = with_step_terms(step, RewardConfig(scheme=scheme))
        right = [g.reward(Role.ASSESSOR) for g in scored if g.assessor_correct]
        wrong = [g.reward(Role.ASSESSOR) for g in scored if g.assessor_correct is False]
        if right and wrong:
            assert min(right) > max(wrong)
        # the attacker, within a category (difficulty_band's outcome is one per category here): with the same
        # assessor outcome, a rewrite that faithfully realised its intended label scores above one that did not
        # (zero_sum has no such term); with the same faithfulness, fooling the assessor scores above not
        # (difficulty_band pays for the rate, not the game)
        attacks = {_attack(g): [] for g in scored if g.attacker_terms is not None}
        for g in scored:
            if g.attacker_terms is not None:
                attacks[_attack(g)].append(g.reward(Role.ATTACKER))
        for (category, fooled, realised), rewards in attacks.items():
            if realised and scheme is not RewardScheme.ZERO_SUM and (category, fooled, False) in attacks:
                assert min(rewards) > max(attacks[(category, fooled, False)]), (category, fooled)
            if fooled and scheme is not RewardScheme.DIFFICULTY_BAND and (category, False, realised) in attacks:
                assert min(rewards) > max(attacks[(category, False, realised)]), (category, realised)


def _attack(game: GameOutcome) -> tuple[Category, bool, bool]:
    """(category, the assessor was fooled, the rewrite faithfully realised its intended label)."""
    return game.category, not game.assessor_correct, bool(game.faithful) and game.truth is game.intended


@functools.cache
def attack_games(category: Category, mode: BenignAttackMode, scheme: RewardScheme) -> tuple[GameOutcome, ...]:
    """One seed attacked: (realised, missed) x (compliant, broken) x (assessor right, fooled), in that order."""
    config = GameConfig(RewardConfig(scheme=scheme), benign_mode=mode)
    intended = intended_label(category, mode)
    missed = Label.NO_ERROR if intended is Label.ERROR else Label.ERROR
    games = []
    for truth, broken, fooled in itertools.product((intended, missed), (False, True), (False, True)):
        verdict = ({Label.ERROR: Label.NO_ERROR, Label.NO_ERROR: Label.ERROR}[truth] if fooled else truth).name
        judged = JudgeVerdict(truth is Label.ERROR, True)
        games.append(
            settle(seed_of(category), reply(NOTE, broken), reply(f"verdict: {verdict}", False), judged, config)
        )
    return tuple(games)


def attacker_answers(
    category: Category, mode: BenignAttackMode, p: float, f: float, g: float, scheme: RewardScheme
) -> list[Answer]:
    """The kinds of attack on one seed with their probabilities; the assessor is fooled half the time."""
    probabilities = [
        share * (breaks if broken else 1 - breaks) / 2
        for share, breaks in ((p, f), (1 - p, g))
        for broken in (False, True)
        for _ in range(2)
    ]
    games = attack_games(category, mode, scheme)
    return [Answer(q, i < 4, game) for i, (q, game) in enumerate(zip(probabilities, games, strict=True))]


def attacker_push(category: Category, mode: BenignAttackMode, p: float, f: float, g: float, scheme) -> float:
    """The attacker's expected update on P(realising its intended label), the assessor fooled half the time."""
    answers = attacker_answers(category, mode, p, f, g, scheme)
    kinds = {answer_kind(a.outcome, Role.ATTACKER) for a in answers}
    compliance = {(Role.ATTACKER, kind): (1 - f) if kind == REALISED else (1 - g) for kind in kinds}
    compliance |= {(Role.ASSESSOR, answer_kind(a.outcome, Role.ASSESSOR)): 1.0 for a in answers}  # all compliant
    shares = StepShares(compliance, error_share=None)
    return expected_pushes([answers], Role.ATTACKER, RewardConfig(scheme=scheme), shares, p, K_ATTACK)[0]


ATTACKS: list[tuple[Category, BenignAttackMode]] = [
    (Category.ADVERSARIAL_HARMFUL, BenignAttackMode.INJECT),  # keep / hide the seed's error
    (Category.ADVERSARIAL_BENIGN, BenignAttackMode.INJECT),
    (Category.ADVERSARIAL_BENIGN, BenignAttackMode.DECOY),
]


@pytest.mark.parametrize("scheme", [RewardScheme.GENERAL_SUM, RewardScheme.ZERO_SUM])
@pytest.mark.parametrize(("category", "mode"), ATTACKS, ids=["keep", "inject", "decoy"])
def test_the_format_does_not_move_the_attacker_between_realising_its_label_and_not(
    category: Category, mode: BenignAttackMode, scheme: RewardScheme
) -> None:
    """general_sum pays a faithful rewrite that realises its label: a push towards it for every break-rate gap up to
    0.5 (the old ±1 format term cancelled it at 0.5); zero_sum has no such term: no push at all, whatever the gap."""
    for p, f, g in itertools.product((0.3, 0.7), RATES, RATES):
        push = attacker_push(category, mode, p, f, g, scheme)
        if scheme is RewardScheme.GENERAL_SUM:
            assert push > EXACT, (p, f, g)
        else:
            assert push == pytest.approx(0.0, abs=EXACT), (p, f, g)
