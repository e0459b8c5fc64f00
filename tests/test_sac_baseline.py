"""The SAC baseline: RLlib's SAC module and learner on our loop, configured like the paper's baseline."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns

from smac_rllib.algorithms import SACBaselineConfig
from smac_rllib.algorithms.baselines.sac_baseline import SACBaselineTorchRLModule
from smac_rllib.training.replay import TransitionReplayBuffer

OBS = gym.spaces.Box(-np.inf, np.inf, (5,), np.float32)
ACT = gym.spaces.Box(-1, 1, (2,), np.float32)


def test_defaults_are_the_papers_sac_baseline():
    config = SACBaselineConfig()
    assert (config.actor_lr, config.critic_lr, config.alpha_lr) == (3e-4, 3e-4, 3e-4)
    assert config.initial_alpha == 0.1 and config.tau == 0.005 and config.gamma == 0.99
    assert config.train_batch_size_per_learner == 256 and config.updates_per_env_step == 1.0
    module = config.environment(observation_space=OBS, action_space=ACT).get_rl_module_spec().build()
    assert isinstance(module, SACBaselineTorchRLModule)
    widths = {m.out_features for m in module.modules() if isinstance(m, torch.nn.Linear)}
    assert 400 in widths and 256 not in widths  # width 400 (paper), not RLlib's 256


def test_deterministic_action_is_the_squashed_mean_inside_the_bounds():
    module = SACBaselineConfig().environment(observation_space=OBS, action_space=ACT).get_rl_module_spec().build()
    with torch.no_grad():
        module.pi.net.mlp[-1].bias.fill_(3.0)  # a mean far outside [-1, 1] before the tanh
        out = module.forward_inference({Columns.OBS: torch.randn(7, 5)})
    dist = module.get_inference_action_dist_cls().from_logits(out[Columns.ACTION_DIST_INPUTS])
    action_B_A = dist.to_deterministic().sample()
    mean_B_A = out[Columns.ACTION_DIST_INPUTS][:, :2]
    torch.testing.assert_close(action_B_A, torch.tanh(mean_B_A))  # RLlib 2.60 alone returns mean_B_A (> 1 here)
    assert action_B_A.abs().max() < 1.0


def test_trains_on_dm_control_with_our_loop_and_transition_replay(ray_local):
    algo = (
        SACBaselineConfig()
        .environment("dmc/cartpole-balance", env_config={"seed": 0})
        .env_runners(num_env_runners=1, rollout_fragment_length=50, num_cpus_per_env_runner=0.5)
        .training(
            hidden_dim=32,
            train_batch_size_per_learner=32,
            num_steps_sampled_before_learning_starts=100,
            updates_per_env_step=0.1,
        )
        .reporting(min_sample_timesteps_per_iteration=200)
        .debugging(seed=0)
        .build_algo()
    )
    try:
        for _ in range(2):
            result = algo.train()
        assert isinstance(algo.local_replay_buffer, TransitionReplayBuffer)
        assert len(algo.local_replay_buffer) == result["env_runners"]["num_env_steps_sampled_lifetime"] >= 400
        assert result["num_updates_lifetime"] >= 30  # 0.1 per step after the first 100
        learner = result["learners"][DEFAULT_MODULE_ID]
        for key in ("qf_loss", "policy_loss", "alpha_value"):
            assert math.isfinite(learner[key]), key
    finally:
        algo.stop()
