"""Tier 3: state-based SMAC trains on real dm_control with a real local Ray (tiny sizes).

Each test asserts that env steps were actually sampled and updates happened: an exception in a remote env
runner's forward pass restarts the runner instead of failing the run (docs/design.md §3). Remote learners (one,
and two DDP learners with two env runners) train in tests/test_async.py, which checks the same losses.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from ray.rllib.core import DEFAULT_MODULE_ID

from smac_rllib.algorithms import SMACConfig

ENV = "dmc/cartpole-balance"


def tiny(num_env_runners: int = 2, **training) -> SMACConfig:
    kw = dict(
        num_particles=4,
        latent_dim=4,
        hidden_dim=32,
        critic_hidden_dim=32,
        train_batch_size_per_learner=32,
        num_steps_sampled_before_learning_starts=100,
        updates_per_env_step=0.1,
    )
    kw.update(training)
    return (
        SMACConfig()
        .environment(ENV, env_config={"seed": 0})
        .env_runners(num_env_runners=num_env_runners, rollout_fragment_length=50, num_cpus_per_env_runner=0.5)
        .training(**kw)
        .reporting(min_sample_timesteps_per_iteration=200)
        .debugging(seed=0)
    )


def _train(algo, iterations: int) -> dict:
    for _ in range(iterations):
        result = algo.train()
    return result


def _assert_trained(result: dict) -> None:
    assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 400
    learner = result["learners"][DEFAULT_MODULE_ID]
    for key in ("critic/loss", "actor/loss", "alpha/value", "estimator/entropy_mlmc"):
        assert math.isfinite(learner[key]), key
    assert result["num_updates_lifetime"] > 0


def test_local_runner_with_vectorized_envs_and_learner_results_keyed_by_module_id_only(ray_local):
    """Also: tools walk learners/<module_id>/...: every learner metric lives under a module id or __all_modules__."""
    from ray.rllib.core import ALL_MODULES

    algo = tiny(num_env_runners=0).env_runners(num_envs_per_env_runner=2).build_algo()
    try:
        result = _train(algo, 2)
        _assert_trained(result)
        learners = result["learners"]
        assert set(learners) <= {DEFAULT_MODULE_ID, ALL_MODULES}, sorted(learners)
        assert learners[ALL_MODULES]["nonfinite_updates_skipped"] == 0
    finally:
        algo.stop()


def test_checkpoint_restore_keeps_weights_alpha_optimizer_and_replay_buffer(ray_local, tmp_path):
    algo = tiny(num_env_runners=1).build_algo()
    try:
        _train(algo, 2)
        path = algo.save_to_path(str(tmp_path / "ckpt"))
        learner_state = algo.learner_group.get_state()["learner"]
        module_state = learner_state["rl_module"][DEFAULT_MODULE_ID]
        buffer_size = algo.local_replay_buffer.get_num_timesteps()
        sampled = algo.metrics.peek(("env_runners", "num_env_steps_sampled_lifetime"))
    finally:
        algo.stop()
    assert buffer_size >= 400

    restored = tiny(num_env_runners=1).build_algo()
    try:
        restored.restore_from_path(path)
        new_learner_state = restored.learner_group.get_state()["learner"]
        new_state = new_learner_state["rl_module"][DEFAULT_MODULE_ID]
        assert set(new_state) == set(module_state)
        for key in module_state:
            np.testing.assert_array_equal(module_state[key], new_state[key], err_msg=key)
        assert new_state["log_alpha"] != pytest.approx(math.log(0.1))  # alpha moved, and came back restored
        optim = new_learner_state["optimizer"]
        for name in ("critic", "actor", "alpha"):
            key = f"{DEFAULT_MODULE_ID}_{name}"
            saved = learner_state["optimizer"][key]["state"]["state"][0]
            loaded = optim[key]["state"]["state"][0]
            assert loaded["step"] == saved["step"] > 0, name
            np.testing.assert_array_equal(loaded["exp_avg_sq"], saved["exp_avg_sq"], err_msg=name)
        assert restored.local_replay_buffer.get_num_timesteps() == buffer_size
        assert restored.metrics.peek(("env_runners", "num_env_steps_sampled_lifetime")) == sampled
        result = restored.train()  # continues from the restored counters and buffer
        assert result["env_runners"]["num_env_steps_sampled_lifetime"] > sampled
        assert restored.local_replay_buffer.get_num_timesteps() > buffer_size
    finally:
        restored.stop()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU (checked on the device machine)")
def test_gpu_learner(ray_local):
    algo = tiny(num_env_runners=1).learners(num_learners=1, num_gpus_per_learner=1).build_algo()
    try:
        _assert_trained(_train(algo, 2))
    finally:
        algo.stop()
