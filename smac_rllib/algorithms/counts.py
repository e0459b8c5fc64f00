"""Parameter counts of every state algorithm's networks: ``param_counts(config)`` (printed by ``python -m``).

The paper compares at (about) equal size: SAC width 400 vs SMAC width 256 (latent policy), MOE5/MOE10 about the
SAC actor, Flow2 / Flow4 about 2x / 4x the SAC actor (docs/baselines.md). Actor = what acts (SMAC: q(s|x) and
pi(a|s)); critic = the twin Q-networks; target networks and log(alpha) are not counted.
"""

from __future__ import annotations

import argparse

import gymnasium as gym
from torch import nn

import smac_rllib
from smac_rllib.algorithms.baselines.sac_baseline.sac_baseline import SACBaselineConfig
from smac_rllib.algorithms.baselines.sac_flow.sac_flow import SACFlowConfig
from smac_rllib.algorithms.baselines.sac_moe.sac_moe import SACMoEConfig
from smac_rllib.algorithms.baselines.td3.td3 import TD3Config
from smac_rllib.algorithms.smac.smac import SMACConfig
from smac_rllib.envs.registry import make_env

# attribute names of each module's actor and critic (SACBaseline is RLlib's SAC module: encoders + heads)
_ACTOR = ("policy", "pi_encoder", "pi")
_CRITIC = ("qf", "qf_twin", "qf_encoder", "qf_twin_encoder")


def _spaces(config) -> tuple[gym.Space, gym.Space]:
    if config.observation_space is not None and config.action_space is not None:
        return config.observation_space, config.action_space
    env = make_env(config.env, dict(config.env_config or {}))
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


def _count(module: nn.Module, names: tuple[str, ...]) -> int:
    seen, total = set(), 0
    for name in names:
        part = getattr(module, name, None)
        if isinstance(part, nn.Module):
            for p in part.parameters():
                if id(p) not in seen:
                    seen.add(id(p))
                    total += p.numel()
    return total


def param_counts(
    config, observation_space: gym.Space | None = None, action_space: gym.Space | None = None
) -> dict[str, int]:
    """{"actor", "critic", "total"} parameters of ``config``'s RLModule for its env (or the spaces given)."""
    if observation_space is None or action_space is None:
        observation_space, action_space = _spaces(config)
    config = config.copy(copy_frozen=False).environment(observation_space=observation_space, action_space=action_space)
    module = config.get_rl_module_spec().build()
    actor, critic = _count(module, _ACTOR), _count(module, _CRITIC)
    return {"actor": actor, "critic": critic, "total": actor + critic}


def paper_state_configs() -> dict:
    """The seven state variants of the paper's comparison (Figs. 3, 4, 9), each at its paper setting."""
    return {
        "SMAC": SMACConfig(),
        "SAC": SACBaselineConfig(),
        "TD3": TD3Config(),
        "Flow2": SACFlowConfig().training(flow_blocks=2),
        "Flow4": SACFlowConfig().training(flow_blocks=4),
        "MOE5": SACMoEConfig().training(num_experts=5),
        "MOE10": SACMoEConfig().training(num_experts=10),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Parameter counts of the paper's state algorithms")
    parser.add_argument("--env", default="dmc/cheetah-run")
    args = parser.parse_args(argv)
    smac_rllib.register()
    configs = paper_state_configs()
    first = next(iter(configs.values())).environment(args.env)
    spaces = _spaces(first)
    counts = {name: param_counts(c, *spaces) for name, c in configs.items()}
    sac_actor = counts["SAC"]["actor"]
    print(f"{args.env}: obs {spaces[0].shape}, action {spaces[1].shape}")
    print(f"{'algorithm':10s} {'actor':>9s} {'/ SAC':>6s} {'critic':>9s} {'total':>9s}")
    for name, c in counts.items():
        print(f"{name:10s} {c['actor']:9,d} {c['actor'] / sac_actor:6.2f} {c['critic']:9,d} {c['total']:9,d}")


if __name__ == "__main__":
    main()
