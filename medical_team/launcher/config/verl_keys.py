"""verl's part of the composed training config, checked before Ray: keys verl does not define, values medplay needs.

Keys that verl 0.9.1's own `ppo_trainer` does not define are typos, unless listed: Hydra accepts a
`+key=value` override and any key a profile file adds, so `trainer.totl_epochs` in a profile would
otherwise be ignored without a word. A few verl values medplay cannot run without are checked too
(`REQUIRED`), values of another type than verl's YAML gives them (`wrong_types`: text where verl has a number),
the numbers a run cannot start with (`POSITIVE`: a learning rate of 0 or less, an empty prompt or response; a
`WHOLE_OR_NULL` count that verl would silently read as unset) and
a prompt cap that cannot hold a rewrite (`length_problems`). `medplay:` is checked by its schema,
medical_team/run/settings.py; `check_config` runs both at once, once the installed verl is known to be the release
medplay was written for (`check_verl_version`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from omegaconf import DictConfig, ListConfig, OmegaConf

from medical_team.run.verl_version import VERL_VERSION, check_verl_version

if TYPE_CHECKING:
    from medical_team.run.settings import SelfPlaySettings

# Subtrees whose keys are free-form (passed on as keyword arguments), or medplay's own section.
FREE_FORM = (
    "actor_rollout_ref.model.override_config",  # Hugging Face config overrides
    # FSDP compute precision (FSDPEngineConfig.mixed_precision: a dict verl reads, not in its YAML)
    "actor_rollout_ref.actor.fsdp_config.mixed_precision",
    "actor_rollout_ref.ref.fsdp_config.mixed_precision",
    "actor_rollout_ref.rollout.engine_kwargs",  # vLLM engine arguments
    "ray_kwargs.ray_init",  # ray.init arguments
    "reward.custom_reward_function.reward_kwargs",  # keyword arguments of the reward function
    "medplay",  # validated by medical_team/run/settings.py
    "hydra",
)
_FREE_SUBKEYS = tuple(tree + "." for tree in FREE_FORM)
# Keys verl reads (with a default) but does not declare in its YAML; each needs `+` on the command line.
READ_NOT_DECLARED = {
    "actor_rollout_ref.rollout.agent.agent_loop_manager_class": "the agent-loop manager verl loads",
    "actor_rollout_ref.rollout.enable_sleep_mode": "vLLM sleep mode (off on CPU, where vLLM rejects it)",
}


# verl values medplay cannot run without: key -> (value, why)
REQUIRED = {
    "trainer.use_v1": (
        True,
        "medplay runs only on verl's V1 trainer (its trainer medplay_sync, the agent loop's TransferQueue rows)",
    ),
}


# verl numbers that must be above 0: key -> what it is. verl's dataclasses take any number and fail mid-run.
POSITIVE = {
    "actor_rollout_ref.actor.optim.lr": "the actor's learning rate",
    "data.max_prompt_length": "the prompt's length cap in tokens",
    "data.max_response_length": "the response's length cap in tokens",
    "data.train_batch_size": "seed rows per step",
    "actor_rollout_ref.rollout.n": "games per seed row",
    "trainer.total_epochs": "epochs",
    "trainer.nnodes": "the nodes the policy trains on",
    "trainer.n_gpus_per_node": "the GPUs the policy trains on per node",
}
# verl numbers that are null (unset) or above 0: key -> what it is.
POSITIVE_OR_NULL = {
    "trainer.total_training_steps": "training steps",
}
# verl numbers that are null or a whole number (verl reads anything but an int as unset): key -> what it is.
WHOLE_OR_NULL = {
    "trainer.max_actor_ckpt_to_keep": "the checkpoints kept (null, 0 or below: every one)",
}


def _key_paths(config: DictConfig, prefix: str = "") -> Iterator[str]:
    """Every key path of `config`, parents before children, without resolving interpolations."""
    for key in config:
        path = f"{prefix}{key}"
        yield path
        node = config._get_node(key)
        if isinstance(node, DictConfig) and not node._is_none():
            yield from _key_paths(node, path + ".")


def verl_base_config() -> DictConfig:
    """verl's own `ppo_trainer` config, composed from the installed verl package and resolved."""
    from hydra import compose, initialize_config_dir

    from medical_team.configs import verl_config_dir

    with initialize_config_dir(config_dir=verl_config_dir(), version_base=None):
        base = compose(config_name="ppo_trainer")
    OmegaConf.resolve(base)  # as the run's config is: interpolated subtrees (e.g. rollout.mtp) get their keys
    return base


def unknown_verl_keys(config: DictConfig, base: DictConfig | None = None) -> list[str]:
    """One problem line per key verl does not define (outside the free-form subtrees), with the closest key."""
    known = set(_key_paths(base if base is not None else verl_base_config()))
    problems = []
    for path in _key_paths(config):
        if path in known or path in READ_NOT_DECLARED or path in FREE_FORM or path.startswith(_FREE_SUBKEYS):
            continue
        parent = path.rpartition(".")[0]
        if parent and parent not in known and parent not in READ_NOT_DECLARED:
            continue  # only the first unknown level of a path is reported
        siblings = [k.rpartition(".")[2] for k in known if k.rpartition(".")[0] == parent]
        close = difflib.get_close_matches(path.rpartition(".")[2], siblings, n=1)
        hint = f"; did you mean {parent + '.' if parent else ''}{close[0]}?" if close else ""
        problems.append(f"{path}: verl {VERL_VERSION} does not define this key{hint}")
    return problems


def verl_value_problems(config: DictConfig) -> list[str]:
    """One problem line per `REQUIRED` key whose value is not the one medplay needs, and per `POSITIVE` key whose
    value is not a number above 0."""
    problems = []
    for key, (value, why) in REQUIRED.items():
        found = OmegaConf.select(config, key)
        if found != value:
            problems.append(f"{key}: {_shown(found)}; {why}: set {key}={_shown(value)}")
    for key, what in POSITIVE.items():
        found = OmegaConf.select(config, key)
        if not _is_number(found) or not found > 0:
            problems.append(f"{key}: {_shown(found)}; {what} must be a number above 0")
    for key, what in POSITIVE_OR_NULL.items():
        found = OmegaConf.select(config, key)
        if found is not None and (not _is_number(found) or not found > 0):
            problems.append(f"{key}: {_shown(found)}; {what}: null or a number above 0")
    for key, what in WHOLE_OR_NULL.items():
        found = OmegaConf.select(config, key)
        if found is not None and (not isinstance(found, int) or isinstance(found, bool)):
            problems.append(f"{key}: {_shown(found)}; {what}: null or a whole number")
    return problems


def wrong_types(config: DictConfig, base: DictConfig) -> list[str]:
    """One problem line per key whose value verl could not use as its own YAML types it: a number where verl has a
    number, true or false where verl has a flag (null stays allowed: verl reads it as unset)."""
    problems = []
    for path in _key_paths(base):
        expected = OmegaConf.select(base, path)
        if path.startswith(_FREE_SUBKEYS) or isinstance(expected, DictConfig | ListConfig) or expected is None:
            continue
        found = OmegaConf.select(config, path, default=None)
        if found is None:
            continue
        if isinstance(expected, bool) and not isinstance(found, bool):
            problems.append(f"{path}: {_shown(found)}; verl expects true or false")
        elif _is_number(expected) and not _is_number(found):
            problems.append(f"{path}: {_shown(found)}; verl expects a number")
    return problems


def _is_number(value: object) -> bool:
    """An int or a float, not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def length_problems(config: DictConfig) -> list[str]:
    """The prompt cap below the response cap: the assessor reads a rewrite of up to `data.max_response_length`
    tokens plus its instructions (the exact check, in the policy's tokens, runs in `medplay train` before Ray)."""
    prompt, response = (OmegaConf.select(config, key) for key in ("data.max_prompt_length", "data.max_response_length"))
    if _is_number(prompt) and _is_number(response) and 0 < prompt <= response:
        why = f"the assessor's prompt holds its instructions and a rewrite of up to data.max_response_length={response}"
        return [f"data.max_prompt_length: {prompt}; {why} tokens: raise it above {response}"]
    return []


def check_config(config: DictConfig) -> SelfPlaySettings:
    """The `medplay:` settings of a composed training config, once every problem of the whole config is known:
    a `UserInputError` naming all of them (verl's keys and values, then the `medplay:` section) otherwise."""
    from medical_team.run.settings import settings_from_trainer_config

    check_verl_version()
    return settings_from_trainer_config(config, verl_problems(config))


def _shown(value: object) -> str:
    """A value as written in YAML and Hydra overrides (`true`, not `True`)."""
    return str(value).lower() if isinstance(value, bool) or value is None else str(value)


def verl_problems(config: DictConfig, base: DictConfig | None = None) -> list[str]:
    """Every problem of verl's part of `config`: keys verl does not define, values of the wrong type, then values
    medplay needs."""
    base = base if base is not None else verl_base_config()
    return [
        *unknown_verl_keys(config, base),
        *wrong_types(config, base),
        *verl_value_problems(config),
        *length_problems(config),
    ]
