"""Per-role REINFORCE++ through verl's own `compute_advantage` dispatch and KL-in-reward penalty."""

from __future__ import annotations

import importlib.resources

import numpy as np
import pytest
import torch
from omegaconf import DictConfig, OmegaConf
from tensordict import TensorDict
from verl.protocol import DataProto
from verl.trainer.ppo import core_algos
from verl.trainer.ppo.ray_trainer import apply_kl_penalty, compute_advantage
from verl.utils.config import omega_conf_to_dataclass
from verl.utils.torch_functional import masked_mean, masked_var

from medical_team.common.vocab import Role
from medical_team.run.roles import role_uid
from medical_team.task_runner.advantage import PER_ROLE_ESTIMATOR

RESPONSE_LENGTH = 6


def algo_config(kl_coef: float = 0.01, use_kl_in_reward: bool = True):
    """verl's AlgoConfig dataclass as the trainer builds it."""
    raw = OmegaConf.create(
        {
            "_target_": "verl.trainer.config.AlgoConfig",
            "gamma": 1.0,
            "lam": 1.0,
            "adv_estimator": PER_ROLE_ESTIMATOR,
            "use_kl_in_reward": use_kl_in_reward,
            "kl_penalty": "kl",
            "kl_ctrl": {"_target_": "verl.trainer.config.KLControlConfig", "type": "fixed", "kl_coef": kl_coef},
        }
    )
    return omega_conf_to_dataclass(raw)


def batch(rewards: list[float], roles: list[Role | None], lengths: list[int]) -> DataProto:
    """Rows with an outcome reward on their last response token, as verl's agent loop stores `rm_scores`."""
    n = len(rewards)
    mask = torch.zeros(n, RESPONSE_LENGTH, dtype=torch.int64)
    scores = torch.zeros(n, RESPONSE_LENGTH)
    for row, (reward, length) in enumerate(zip(rewards, lengths, strict=True)):
        mask[row, :length] = 1
        if length:
            scores[row, length - 1] = reward
    uids = [role_uid(f"p{row // 2}", role) if role else f"pad{row}" for row, role in enumerate(roles)]
    generator = torch.Generator().manual_seed(0)
    return DataProto(
        batch=TensorDict(
            {
                "response_mask": mask,
                "token_level_scores": scores,
                "old_log_probs": -torch.rand(n, RESPONSE_LENGTH, generator=generator),
                "ref_log_prob": -torch.rand(n, RESPONSE_LENGTH, generator=generator),
            },
            batch_size=n,
        ),
        non_tensor_batch={"uid": np.array(uids, dtype=object)},
    )


ROLES = [Role.ATTACKER, Role.ASSESSOR] * 4 + [None]
ATTACKER_REWARDS = [2.5, -0.5, 1.5, 0.5]  # general_sum attacker totals live around +-2.5
ASSESSOR_REWARDS = [2.0, -2.0, 0.0, 2.0]


def mixed_batch() -> DataProto:
    rewards = [r for pair in zip(ATTACKER_REWARDS, ASSESSOR_REWARDS, strict=True) for r in pair] + [0.0]
    return batch(rewards, ROLES, [6, 4, 5, 3, 6, 6, 2, 5, 0])


def rows_of(role: Role | None) -> list[int]:
    return [i for i, r in enumerate(ROLES) if r is role]


def test_estimator_is_registered_with_verl() -> None:
    assert core_algos.get_adv_estimator_fn(PER_ROLE_ESTIMATOR).__module__ == "medical_team.task_runner.advantage"


def test_advantages_are_whitened_separately_per_role() -> None:
    data = mixed_batch()
    data.batch["token_level_rewards"] = data.batch["token_level_scores"]
    out = compute_advantage(data, adv_estimator=PER_ROLE_ESTIMATOR, config=algo_config())
    adv, mask = out.batch["advantages"], out.batch["response_mask"]
    for role in (Role.ATTACKER, Role.ASSESSOR):
        rows = rows_of(role)
        assert masked_mean(adv[rows], mask[rows]).item() == pytest.approx(0.0, abs=1e-5)
        assert masked_var(adv[rows], mask[rows]).item() == pytest.approx(1.0, abs=1e-3)
        # each role's advantages are exactly verl's REINFORCE++ run on that role's rows alone
        alone, _ = core_algos.compute_reinforce_plus_plus_outcome_advantage(
            data.batch["token_level_rewards"][rows], mask[rows], config=algo_config()
        )
        torch.testing.assert_close(adv[rows], alone)
    assert torch.count_nonzero(adv[rows_of(None)]) == 0  # padding row
    # whitening the whole batch at once would mix the roles: the per-role result differs
    joint, _ = core_algos.compute_reinforce_plus_plus_outcome_advantage(
        data.batch["token_level_rewards"], mask, config=algo_config()
    )
    assert not torch.allclose(joint, adv)


def test_returns_include_the_kl_penalty_of_the_reward() -> None:
    data = mixed_batch()
    kl_ctrl = core_algos.get_kl_controller(algo_config().kl_ctrl)
    data, kl_metrics = apply_kl_penalty(data, kl_ctrl=kl_ctrl, kl_penalty="kl")
    assert kl_metrics["actor/reward_kl_penalty_coeff"] == pytest.approx(0.01)
    out = compute_advantage(data, adv_estimator=PER_ROLE_ESTIMATOR, config=algo_config())
    mask = out.batch["response_mask"]
    kl = (data.batch["old_log_probs"] - data.batch["ref_log_prob"]) * mask
    expected_first_return = (data.batch["token_level_scores"] - 0.01 * kl).sum(dim=1)
    torch.testing.assert_close(out.batch["returns"][:, 0], expected_first_return * mask[:, 0])


def test_rows_must_carry_uids() -> None:
    fn = core_algos.get_adv_estimator_fn(PER_ROLE_ESTIMATOR)
    data = mixed_batch()
    with pytest.raises(ValueError, match="uids"):
        fn(
            token_level_rewards=data.batch["token_level_scores"],
            response_mask=data.batch["response_mask"],
            config=algo_config(),
        )


# --- groups: k games per seed row (actor_rollout_ref.rollout.n = k) ---------------------------------


def grouped_batch(groups: list[tuple[str, Role, list[float]]]) -> DataProto:
    """Rows of seed groups: (seed uid, role, the k rewards), lengths cycling so whitening is token-weighted."""
    rows = [(seed, role, reward) for seed, role, rewards in groups for reward in rewards]
    data = batch([r for _, _, r in rows], [role for _, role, _ in rows], [2 + i % 5 for i in range(len(rows))])
    data.non_tensor_batch["uid"] = np.array([role_uid(seed, role) for seed, role, _ in rows], dtype=object)
    data.batch["token_level_rewards"] = data.batch["token_level_scores"]
    return data


def advantages_of(data: DataProto) -> torch.Tensor:
    config = algo_config(use_kl_in_reward=False)
    return compute_advantage(data, adv_estimator=PER_ROLE_ESTIMATOR, config=config).batch["advantages"]


def test_single_role_groups_equal_verls_reinforce_plus_plus_baseline() -> None:
    data = grouped_batch([("s0", Role.ASSESSOR, [2.0, -2.0, 0.0]), ("s1", Role.ASSESSOR, [1.0, 2.0, -1.0, 0.5])])
    expected, _ = core_algos.compute_reinforce_plus_plus_baseline_outcome_advantage(
        data.batch["token_level_rewards"], data.batch["response_mask"], index=data.non_tensor_batch["uid"]
    )
    torch.testing.assert_close(advantages_of(data), expected)


def test_a_group_with_equal_rewards_gets_zero_advantage() -> None:
    data = grouped_batch([("flat", Role.ASSESSOR, [-2.0, -2.0, -2.0]), ("s1", Role.ASSESSOR, [2.0, -2.0, 2.0])])
    adv, mask = advantages_of(data), data.batch["response_mask"]
    assert torch.count_nonzero(adv[:3]) == 0
    assert torch.count_nonzero(adv[3:] * mask[3:]) == int(mask[3:].sum())
    # the flat group stays out of the whitening: the other group's advantages are verl's on its rows alone
    alone, _ = core_algos.compute_reinforce_plus_plus_baseline_outcome_advantage(
        data.batch["token_level_rewards"][3:], mask[3:], index=data.non_tensor_batch["uid"][3:]
    )
    torch.testing.assert_close(adv[3:], alone)


def test_a_sample_left_alone_in_its_group_gets_zero_advantage() -> None:
    data = grouped_batch([("tie", Role.ASSESSOR, [2.0]), ("s1", Role.ASSESSOR, [2.0, -2.0])])
    assert torch.count_nonzero(advantages_of(data)[0]) == 0


def test_roles_never_share_a_baseline() -> None:
    # One seed, two games: the attacker's rewards differ, the assessor's are equal. A baseline shared by
    # the roles (mean 1.0 over all four rows) would give the assessor rows advantages.
    data = grouped_batch([("s0", Role.ATTACKER, [2.5, -0.5]), ("s0", Role.ASSESSOR, [1.0, 1.0])])
    adv = advantages_of(data)
    assert torch.count_nonzero(adv[2:]) == 0
    alone, _ = core_algos.compute_reinforce_plus_plus_baseline_outcome_advantage(
        data.batch["token_level_rewards"][:2], data.batch["response_mask"][:2], index=data.non_tensor_batch["uid"][:2]
    )
    torch.testing.assert_close(adv[:2], alone)
    assert adv[0].sum() > 0 > adv[1].sum()


# --- the KL to the reference never reaches the group baselines --------------------------------------


def project_algorithm() -> DictConfig:
    """configs/medplay.yaml's `algorithm:` section over verl's defaults, as `medplay train` composes it."""
    from hydra import compose, initialize_config_module

    text = (importlib.resources.files("medical_team.configs") / "medplay.yaml").read_text()
    with initialize_config_module("verl.trainer.config", version_base=None):
        base = compose("ppo_trainer")
    return OmegaConf.merge(base.algorithm, OmegaConf.create(text).algorithm)


def test_with_a_nonzero_kl_a_group_of_equal_scores_still_gets_zero_advantage() -> None:
    # The policy has left the reference (old and reference log-probs differ on every token). With the
    # project's algorithm settings, the rewards the estimator sees are what verl's trainer makes of the
    # scores (`_compute_advantage`: the KL penalty added when use_kl_in_reward is on), so a group of
    # equal game scores must still get zero advantage and the other group verl's baseline on its scores.
    data = grouped_batch([("flat", Role.ASSESSOR, [-2.0, -2.0, -2.0]), ("s1", Role.ASSESSOR, [2.0, -2.0, 2.0])])
    kl = data.batch["old_log_probs"] - data.batch["ref_log_prob"]
    assert bool(((kl != 0) | (data.batch["response_mask"] == 0)).all())
    config = omega_conf_to_dataclass(project_algorithm())
    if config.use_kl_in_reward:
        kl_ctrl = core_algos.get_kl_controller(config.kl_ctrl)
        data, _ = apply_kl_penalty(data, kl_ctrl=kl_ctrl, kl_penalty=config.kl_penalty)
    else:
        data.batch["token_level_rewards"] = data.batch["token_level_scores"]
    adv = compute_advantage(data, adv_estimator=PER_ROLE_ESTIMATOR, config=config).batch["advantages"]
    assert torch.count_nonzero(adv[:3]) == 0
    mask = data.batch["response_mask"]
    on_scores, _ = core_algos.compute_reinforce_plus_plus_baseline_outcome_advantage(
        data.batch["token_level_scores"][3:], mask[3:], index=data.non_tensor_batch["uid"][3:]
    )
    torch.testing.assert_close(adv[3:], on_scores)


def test_the_kl_is_in_the_actors_loss() -> None:
    text = (importlib.resources.files("medical_team.configs") / "medplay.yaml").read_text()
    actor = OmegaConf.create(text).actor_rollout_ref.actor
    assert actor.use_kl_loss and actor.kl_loss_coef > 0


def test_groups_refuse_a_kl_penalty_in_the_rewards() -> None:
    data = grouped_batch([("flat", Role.ASSESSOR, [-2.0, -2.0]), ("s1", Role.ASSESSOR, [2.0, -2.0])])
    data, _ = apply_kl_penalty(data, kl_ctrl=core_algos.get_kl_controller(algo_config().kl_ctrl), kl_penalty="kl")
    with pytest.raises(ValueError, match="use_kl_loss=true"):
        compute_advantage(data, adv_estimator=PER_ROLE_ESTIMATOR, config=algo_config())
