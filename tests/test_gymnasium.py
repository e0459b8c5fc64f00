"""Gymnasium envs as first-class (``env: <gymnasium id>``): SMAC and the state baselines train on a MuJoCo env
(HalfCheetah-v5) and a classic-control one (Pendulum-v1, action bounds [-2, 2]) with seeding, episode limits and
evaluation as for ``dmc/...``; envs SMAC cannot learn from are refused before Ray in one line.

Real Ray, real gymnasium/MuJoCo, tiny nets.
"""

from __future__ import annotations

import math
import re

import gymnasium as gym
import numpy as np
import pytest

from smac_rllib.cli.errors import UserError


class ImageObsEnv(gym.Env):
    """A continuous-action env observing images: what SMAC's state path cannot take from a gymnasium id."""

    observation_space = gym.spaces.Box(0, 255, shape=(8, 8, 3), dtype=np.uint8)
    action_space = gym.spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        return np.zeros((8, 8, 3), np.uint8), {}

    def step(self, action):
        return np.zeros((8, 8, 3), np.uint8), 0.0, False, False, {}


def _config(algo: str, env: str, env_config: dict | None = None, seed: int = 0):
    import smac_rllib.algorithms as algorithms

    if algo == "SMAC":
        config = algorithms.SMACConfig().training(num_particles=4, latent_dim=4, hidden_dim=16, critic_hidden_dim=16)
    else:
        config = getattr(algorithms, f"{algo}Config")().training(hidden_dim=16)
    return (
        config.environment(env, env_config=env_config or {})
        .training(
            updates_per_env_step=0.1,
            train_batch_size_per_learner=16,
            num_steps_sampled_before_learning_starts=100,
            initial_alpha=0.1,
            async_learning=False,
        )
        .env_runners(num_env_runners=0, rollout_fragment_length=50)
        .reporting(min_sample_timesteps_per_iteration=200)
        .evaluation(
            evaluation_interval=1,
            evaluation_duration=1,
            evaluation_duration_unit="episodes",
            evaluation_num_env_runners=0,
            evaluation_config={"explore": False},
        )
        .debugging(seed=seed)
    )


@pytest.mark.parametrize(
    "algo,env,env_config,episode_len",
    [
        (
            "SMAC",
            "HalfCheetah-v5",
            {"max_episode_steps": 100},
            100,
        ),  # gymnasium's own limit, shortened through gym.make
        ("SMAC", "Pendulum-v1", {}, 200),
        ("SACBaseline", "Pendulum-v1", {}, 200),
        ("TD3", "Pendulum-v1", {}, 200),
        ("SACFlow", "Pendulum-v1", {}, 200),
        ("SACMoE", "Pendulum-v1", {}, 200),
    ],
)
def test_trains_and_evaluates_on_a_gymnasium_env(ray_local, algo, env, env_config, episode_len):
    built = _config(algo, env, env_config).build_algo()
    try:
        result = built.train()
        assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 200
        assert result["num_updates_lifetime"] == math.floor(
            0.1 * (result["env_runners"]["num_env_steps_sampled_lifetime"] - 100) + 1e-9
        )
        evaluation = result["evaluation"]["env_runners"]
        assert evaluation["episode_len_mean"] == episode_len, "the env's episode limit, as for dmc/..."
        assert math.isfinite(evaluation["episode_return_mean"])
        if env == "Pendulum-v1":  # rewards in [-16.3, 0] per step: a return inside the bounds of 200 steps
            assert -16.3 * 200 <= evaluation["episode_return_mean"] <= 0.0
    finally:
        built.stop()


def test_the_seed_fixes_the_gymnasium_episodes(ray_local):
    """The same seed gives the same warm-up episode (env reset and uniform actions), another seed another one."""

    def first_return(seed: int) -> float:
        built = _config("SMAC", "Pendulum-v1", seed=seed).evaluation(evaluation_interval=None).build_algo()
        try:
            return built.train()["env_runners"]["episode_return_mean"]
        finally:
            built.stop()

    first = first_return(0)
    assert first_return(0) == first
    assert first_return(1) != first


def test_envs_smac_cannot_learn_from_are_refused_before_ray(tmp_path):
    from smac_rllib.cli.yaml_loader import load_experiments

    if "SmacTestImageObs-v0" not in gym.registry:
        gym.register("SmacTestImageObs-v0", entry_point="tests.test_gymnasium:ImageObsEnv")
    base = "x:\n  run: SMAC\n  env: {env}\n  stop: {{training_iteration: 1}}\n  config:\n    num_env_runners: 0\n"
    for env, expect in (
        ("SmacTestImageObs-v0", "learns from a flat vector of observations (a 1-D Box)"),
        ("CartPole-v1", "needs a continuous (Box) action space"),
    ):
        path = tmp_path / f"{env}.yaml"
        path.write_text(base.format(env=env))
        with pytest.raises(UserError, match=re.escape(expect)):
            load_experiments(str(path))
    path = tmp_path / "ok.yaml"
    path.write_text(
        base.format(env="HalfCheetah-v5").replace(
            "    num_env_runners: 0\n", "    num_env_runners: 0\n    env_config: {max_episode_steps: 100}\n"
        )
    )
    (spec,) = load_experiments(str(path))
    assert spec.configs[0].env == "HalfCheetah-v5" and spec.configs[0].env_config == {"max_episode_steps": 100}


def test_the_halfcheetah_tuned_example_checks_clean():
    from pathlib import Path

    from smac_rllib.cli.yaml_loader import load_experiments

    (spec,) = load_experiments(str(Path(__file__).resolve().parent.parent / "tuned_examples" / "smac_halfcheetah.yaml"))
    assert spec.run == "SMAC" and spec.configs[0].env == "HalfCheetah-v5"
