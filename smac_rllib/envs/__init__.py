"""DeepMind Control Suite envs for RLlib: ``DMCEnv`` (states | pixels), perturbations, ``dmc/<domain>-<task>`` names."""

# dmc first: it sets MUJOCO_GL=egl (unless set) before anything here imports dm_control.
from smac_rllib.envs.dmc import DMCEnv, end_flags
from smac_rllib.envs.registry import (
    ENV_CONFIG_KEYS,
    derive_seed,
    env_names,
    make_env,
    parse_env_name,
    register_dmc_envs,
)

__all__ = [
    "DMCEnv",
    "ENV_CONFIG_KEYS",
    "derive_seed",
    "end_flags",
    "env_names",
    "make_env",
    "parse_env_name",
    "register_dmc_envs",
]
