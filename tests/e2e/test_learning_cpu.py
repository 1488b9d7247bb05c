"""End to end: the real trainer learns a reward through group baselines; the inverted control unlearns it.

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_learning_cpu.py

`medplay train profile=cpu-smoke` runs twice, one after the other, with `medplay.learning_probe` on (docs/game.md,
"Learning probe"): the assessor is rewarded for an even first token id, the attacker for a first
token id in the lower half of the vocabulary, each through the game's own reward path (agent loop,
two games per seed row, per-seed group baselines per role, actor update, weight sync to vLLM). The
behaviour rates are read from each step's rollout (`probe/<role>/behaviour_rate` in metrics.jsonl), so they only move when the
updated weights reach the rollout. A sign error, a reward landing on the other role's row, or a
role whose rows get no advantage keeps a rate from rising; the control run, rewarding the
opposite, shows the movement follows the reward and not a drift of the model.

Why the outcome is the same every run. Unseeded, vLLM draws every request's tokens from one generator
in the order its scheduler batched them, which depends on when each game's request arrived: the same
code sampled different first tokens from run to run, and 16 steps of 2 informative attacker groups
a step sometimes did not move the attacker (a fresh clone failed once at 0.68 -> 0.62, the rerun
passed). With `medplay.seeded_sampling` every turn samples with its own seed (rollout seed, step, data
row, game of the row, turn) and the update takes its rows in data-row order rather than the order the
games finished; the data order is seeded, the tiny model is built from seed 0, and the update runs on
one CPU rank in fp32 with one thread. So a run's figures are a function of the code alone (shown:
repeated runs give identical per-step rates and losses, docs/results/learning-probe.md).
The false-failure rate on a machine is therefore 0, not merely small: the test fails only when a
change of the code changes the figures, and then on every run. Another CPU family may round
differently and so follow another (equally reproducible) path; the margins below are what such a
path has to keep.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cpu_smoke import convert, metrics_by_step, train, train_timeout_s

from medical_team.common.vocab import Role

STEPS = 16
# The module's fixture trains twice, each under its hang guard: the tests' limit (their setup included) covers both
# and the conversions, so a slow machine meets the trainings' own limits, not pytest's default 900 s.
pytestmark = [pytest.mark.e2e, pytest.mark.long, pytest.mark.timeout(2 * train_timeout_s(STEPS) + 300)]
START_WINDOW = 3  # steps pooled for the start rate (a sanity check of the measurement)
END_WINDOW = 5  # steps pooled for the end rate: about 80 assessor and 40 attacker turns
# Each behaviour is an exact half of the vocabulary and a random model's first token is near uniform, so
# every rate starts at 0.5. A model that does not learn stays there: pooled over END_WINDOW steps its end
# rate has a standard deviation of about 0.08 (attacker), so an end rate MARGIN away from 0.5 for all four
# role x run checks at once does not happen by chance, while a learning run ends 0.3-0.5 away (measured:
# docs/results/learning-probe.md).
START = 0.5
MARGIN = 0.15
START_TOLERANCE = 0.35  # the first steps' rate is a noisy estimate (about 24 attacker turns)
PROBE_OVERRIDES = (
    "medplay.learning_probe.enabled=true",
    # 16 games a step in groups: 8 seed rows, two games each (about 8 attacker turns and 16 assessor turns),
    # so the advantages are the per-seed group baselines (docs/game.md, "Advantages").
    "data.train_batch_size=8",
    "actor_rollout_ref.rollout.n=2",
    "actor_rollout_ref.actor.ppo_mini_batch_size=8",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16",
    # The behaviour is the first token: one token per turn keeps the update on it.
    "data.max_response_length=1",
    # A random ~100 K-parameter model takes a large step.
    "actor_rollout_ref.actor.optim.lr=3e-2",
    # No checkpoints: the test reads only the metrics.
    "trainer.save_freq=-1",
    # Every turn samples with its own seed: the outcome does not depend on how vLLM batched the requests.
    "medplay.seeded_sampling=true",
    # The shuffle of the data rows, explicit (verl leaves it to torch.Generator()'s default seed).
    "data.seed=0",
)


def behaviour_rates(root: Path) -> dict[Role, list[tuple[float, float]]]:
    """(behaviour rate, turns) per step and role, from the run's metrics file."""
    steps = metrics_by_step(root)
    assert sorted(steps) == list(range(1, STEPS + 1))
    return {
        role: [
            (steps[s][f"probe/{role.value}/behaviour_rate"], steps[s][f"probe/{role.value}/turns"])
            for s in sorted(steps)
        ]
        for role in Role
    }


def pooled(rates: list[tuple[float, float]]) -> float:
    """The behaviour rate over all turns of the given steps."""
    return sum(rate * turns for rate, turns in rates) / sum(turns for _, turns in rates)


def start_and_end(rates: list[tuple[float, float]]) -> tuple[float, float]:
    """The pooled rate of the first START_WINDOW and of the last END_WINDOW steps."""
    return pooled(rates[:START_WINDOW]), pooled(rates[-END_WINDOW:])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[Role, list[tuple[float, float]]]]:
    """The probe run, then the inverted control run (one at a time: `make test` already runs two test files at once)."""
    rates = {}
    for name in ("probe", "control"):
        root = tmp_path_factory.mktemp(name)
        convert(root / "data")
        train(root, STEPS, *PROBE_OVERRIDES, f"medplay.learning_probe.inverted={name == 'control'}")
        rates[name] = behaviour_rates(root)
    return rates


@pytest.mark.parametrize("role", list(Role))
def test_each_roles_behaviour_rises_in_the_same_probe_run(runs, role: Role) -> None:
    start, end = start_and_end(runs["probe"][role])
    assert abs(start - START) < START_TOLERANCE, f"{role.value}: the run started at {start:.2f}, not near {START}"
    assert end >= START + MARGIN, f"{role.value}: {start:.2f} -> {end:.2f} over {STEPS} steps"


@pytest.mark.parametrize("role", list(Role))
def test_each_roles_behaviour_falls_in_the_inverted_control(runs, role: Role) -> None:
    start, end = start_and_end(runs["control"][role])
    assert abs(start - START) < START_TOLERANCE, f"{role.value}: the run started at {start:.2f}, not near {START}"
    assert end <= START - MARGIN, f"{role.value}: {start:.2f} -> {end:.2f} over {STEPS} steps"
