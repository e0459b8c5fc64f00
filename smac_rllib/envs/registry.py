"""Envs by name: ``make_env("dmc/<domain>-<task>", env_config)`` with per-runner seeds, and Tune/gymnasium registration.

``register_dmc_envs()`` makes ``config.environment("dmc/cheetah-run", env_config={...})`` work in RLlib (and
``gymnasium.make("dmc/cheetah-run", from_pixels=True)``). The creator takes RLlib's env_config, whose keys are
``ENV_CONFIG_KEYS`` = the keyword arguments of ``DMCEnv`` (documented there).
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from smac_rllib.envs.dmc import DMCEnv
from smac_rllib.envs.names import PREFIX, env_names, parse_env_name

__all__ = ["ENV_CONFIG_KEYS", "env_names", "parse_env_name", "make_env", "derive_seed", "register_dmc_envs"]

ENV_CONFIG_KEYS: tuple[str, ...] = tuple(
    name for name, p in inspect.signature(DMCEnv.__init__).parameters.items() if p.kind is p.KEYWORD_ONLY
)


def derive_seed(seed: int, worker_index: int = 0, vector_index: int = 0) -> int:
    """A distinct 32-bit seed per (env runner, sub-env); ``seed`` itself for runner 0, sub-env 0."""
    if worker_index == 0 and vector_index == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(worker_index), int(vector_index)]).generate_state(1)[0])


def make_env(name: str, env_config: Mapping[str, Any] | None = None) -> DMCEnv:
    """Build ``DMCEnv`` for ``name`` from an RLlib env_config (a dict or an ``EnvContext``).

    With an ``EnvContext`` and a ``seed``, each env runner / sub-env gets ``derive_seed(seed, worker_index,
    vector_index)``. RLlib's SingleAgentEnvRunner builds all sub-envs of a runner from one EnvContext with
    vector_index 0, so the k-th env built from the same context object counts as sub-env k (gymnasium's default
    'sync' vectorization). Under 'async' each sub-env process unpickles its own copy of the context and the
    sub-envs would share a seed: there, seed with RLlib's ``config.debugging(seed=...)`` instead (it resets
    sub-env i with seed + worker_index + i, overriding the env_config seed).
    """
    domain, task = parse_env_name(name)
    config = dict(env_config or {})
    if "num_envs" in config:
        raise ValueError(
            f"{PREFIX}{domain}-{task} builds one env, not a vector env: use "
            "config.env_runners(gym_env_vectorize_mode='sync' or 'async'), not 'vector_entry_point'"
        )
    unknown = [k for k in config if k not in ENV_CONFIG_KEYS]
    if unknown:
        key = unknown[0]
        close = difflib.get_close_matches(str(key), ENV_CONFIG_KEYS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(
            f"unknown env_config key {key!r} for {PREFIX}{domain}-{task}; {hint}(valid keys: "
            f"{', '.join(ENV_CONFIG_KEYS)})"
        )
    if config.get("seed") is not None:
        worker_index = getattr(env_config, "worker_index", 0) or 0
        vector_index = (getattr(env_config, "vector_index", 0) or 0) + _count_envs_built(env_config)
        config["seed"] = derive_seed(config["seed"], worker_index, vector_index)
    return DMCEnv(domain, task, **config)


def _count_envs_built(env_config: Any) -> int:
    """How many envs were built from this RLlib EnvContext object before (0 for a plain dict)."""
    if not hasattr(env_config, "worker_index"):
        return 0
    count = getattr(env_config, "_smac_envs_built", 0)
    env_config._smac_envs_built = count + 1
    return count


def _gym_entry_point(name: str, **kwargs: Any) -> DMCEnv:
    return make_env(name, kwargs)


def register_dmc_envs() -> list[str]:
    """Register every ``dmc/<domain>-<task>`` with ray.tune (RLlib's env lookup) and gymnasium; returns the names.

    Idempotent and does not start Ray. Tune's registry lives in the current Ray job: call this again after a new
    ``ray.init`` (registering before ``ray.init`` is fine, the values are flushed when Ray starts).
    """
    from ray.tune.registry import register_env  # lazy: the envs import without Ray (~1 s less)

    names = env_names()
    for name in names:
        register_env(name, functools.partial(make_env, name))
        if name not in gym.registry:
            gym.register(name, entry_point=functools.partial(_gym_entry_point, name), disable_env_checker=False)
    return names
