"""The paper's Dreamer baseline (``run: Dreamer``: the reference code's DreamerV1 on our world model): the lambda-return
and discount weights against hand computations, imagination shapes and where its gradients go, a learner update, and
a real training iteration with a checkpoint that restores and trains on (dm_control pixels, tiny nets)."""

from __future__ import annotations

import math

import pytest
import torch
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

from smac_rllib.algorithms import DreamerConfig
from smac_rllib.objectives.imagination import actor_value_losses, discount_weights, imagine_ahead, lambda_returns
from smac_rllib.models.world_model import WorldModel, WorldModelConfig
from smac_rllib.models.latent_policy import TanhGaussianHead
from tests.test_smac_pixels import SPACES, fake_sequences
from tests.test_smac_pixels import TINY as SMAC_TINY

TINY = {k: v for k, v in SMAC_TINY.items() if k != "critic_layers"}  # SMAC's critics: not Dreamer's

torch.set_num_threads(1)


def test_lambda_returns_by_hand():
    """H = 3, one start: R_2 = r_2 + g v_2; R_1 = r_1 + g((1-l) v_1 + l R_2); R_0 = r_0 + g((1-l) v_0 + l R_1)."""
    r, v, g, lam = [1.0, 2.0, 3.0], [10.0, 20.0, 30.0], 0.9, 0.5
    R2 = r[2] + g * v[2]
    R1 = r[1] + g * ((1 - lam) * v[1] + lam * R2)
    R0 = r[0] + g * ((1 - lam) * v[0] + lam * R1)
    got = lambda_returns(torch.tensor(r)[:, None], torch.tensor(v)[:, None], torch.full((3, 1), g), lam)
    torch.testing.assert_close(got[:, 0], torch.tensor([R0, R1, R2]))
    # lam = 1: the discounted Monte Carlo return bootstrapped with the last value; lam = 0: one-step targets
    mc = lambda_returns(torch.tensor(r)[:, None], torch.tensor(v)[:, None], torch.full((3, 1), g), 1.0)[0, 0]
    assert float(mc) == pytest.approx(r[0] + g * r[1] + g**2 * r[2] + g**3 * v[2])
    td = lambda_returns(torch.tensor(r)[:, None], torch.tensor(v)[:, None], torch.full((3, 1), g), 0.0)[:, 0]
    torch.testing.assert_close(td, torch.tensor([r[0] + g * v[0], r[1] + g * v[1], r[2] + g * v[2]]))


def test_discount_weights_and_losses_by_hand():
    w = discount_weights(torch.full((4, 2), 0.9))
    torch.testing.assert_close(w[:, 0], torch.tensor([1.0, 0.9, 0.81, 0.729]))
    reward, value, pred = torch.ones(2, 1), torch.zeros(2, 1), torch.tensor([[1.0], [0.0]])
    actor, value_loss, returns, weights = actor_value_losses(reward, value, pred, discount=0.5, lam=1.0)
    # R_1 = 1 + 0.5 * 0 = 1, R_0 = 1 + 0.5 * R_1 = 1.5; weights 1, 0.5
    torch.testing.assert_close(returns[:, 0], torch.tensor([1.5, 1.0]))
    assert float(actor) == pytest.approx(-(1 * 1.5 + 0.5 * 1.0) / 2)
    half_log_2pi = 0.5 * math.log(2 * math.pi)
    expected = (1 * (0.5 * 0.5**2 + half_log_2pi) + 0.5 * (0.5 * 1.0 + half_log_2pi)) / 2  # -log N(R; v, 1), weighted
    assert float(value_loss) == pytest.approx(expected)


def test_imagination_shapes_and_gradients_reach_the_actor_through_the_dynamics_only():
    torch.manual_seed(0)
    wm = WorldModel(2, WorldModelConfig.preset("tiny"))
    actor = TanhGaussianHead(wm.feat_dim, 2, 16, 2, torch.nn.ELU, head="dreamer")
    N, H = 5, 4
    start = {
        "stoch": torch.randn(N, wm.rssm.stoch_size),
        "deter": torch.randn(N, wm.rssm.deter_size, requires_grad=True),
    }
    for p in wm.parameters():
        p.requires_grad_(False)
    feat_H1_N_F, log_pi_H_N = imagine_ahead(wm.rssm, actor, start, H)
    assert feat_H1_N_F.shape == (H + 1, N, wm.feat_dim) and log_pi_H_N.shape == (H, N)
    torch.testing.assert_close(feat_H1_N_F[0], wm.rssm.get_feat(start).detach())  # state 0 is the start
    objective = wm.predict_reward(feat_H1_N_F[1:]).sum()
    objective.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in actor.parameters())  # through the actions
    assert start["deter"].grad is None  # the start states are detached


def _learner():
    config = (
        DreamerConfig()
        .environment("dmc/cartpole-swingup", env_config={"from_pixels": True, "fast_render": True, "seed": 0})
        .training(**TINY, imagine_horizon=3)
    )
    return config, config.build_learner(spaces=SPACES)


def test_one_learner_update_trains_world_model_value_and_actor():
    config, learner = _learner()
    assert config.actor_lr == 8e-5 and config.value_lr == 8e-5 and config.world_model_lr == 6e-4  # the reference's
    module = learner.module[DEFAULT_MODULE_ID]
    assert not hasattr(module, "qf") and not hasattr(module, "log_alpha")
    before = {k: v.detach().clone() for k, v in module.state_dict().items()}
    results = learner.update(
        batch=MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(fake_sequences())}, env_steps=18),
        timesteps={"num_env_steps_sampled_lifetime": 10_000},
    )
    after = module.state_dict()
    for prefix in ("world_model.encoder", "world_model.rssm", "world_model.decoder", "value", "actor"):
        assert any(not torch.equal(before[k], v) for k, v in after.items() if k.startswith(prefix)), prefix
    metrics = results[DEFAULT_MODULE_ID]
    for key in (
        "world_model/loss",
        "dreamer/actor_loss",
        "dreamer/value_loss",
        "dreamer/return_mean",
        "gradients/actor_global_norm",
    ):
        assert math.isfinite(metrics[key].peek()), key


def test_config_names_the_fix():
    state = DreamerConfig().environment("dmc/cartpole-swingup")
    assert any("pixels only" in e for e in state.config_errors())
    pixels = DreamerConfig().environment("dmc/cartpole-swingup", env_config={"from_pixels": True})
    assert pixels.copy().training(imagine_horizon=0).config_errors() == [
        "imagine_horizon=0 must be an integer >= 1 (reference: 15)"
    ]
    assert pixels.copy().training(return_lambda=1.5).config_errors() == [
        "return_lambda=1.5 must be a number in [0, 1] (reference: 0.95)"
    ]


def test_dreamer_trains_and_its_checkpoint_restores_and_trains_on(ray_local, tmp_path):
    def tiny_run():
        return (
            DreamerConfig()
            .environment("dmc/cartpole-swingup", env_config={"from_pixels": True, "fast_render": True, "seed": 0})
            .training(
                **TINY, imagine_horizon=3, num_steps_sampled_before_learning_starts=100, updates_per_env_step=0.03
            )
            .env_runners(num_env_runners=0, rollout_fragment_length=50)
            .reporting(min_sample_timesteps_per_iteration=150)
            .debugging(seed=0)
        )

    algo = tiny_run().build_algo()
    try:
        result = algo.train()
        assert result["num_updates_lifetime"] > 0
        learner = result["learners"][DEFAULT_MODULE_ID]
        for key in ("world_model/loss", "dreamer/actor_loss", "dreamer/value_loss"):
            assert math.isfinite(learner[key]), key
        path = algo.save_to_path(str(tmp_path / "ckpt"))
        weights = {k: v.clone() for k, v in algo.learner_group._learner.module[DEFAULT_MODULE_ID].state_dict().items()}
        size = algo.local_replay_buffer.get_num_timesteps()
    finally:
        algo.stop()
    restored = tiny_run().build_algo()
    try:
        restored.restore_from_path(path)
        assert restored.local_replay_buffer.get_num_timesteps() == size
        theirs = restored.learner_group._learner.module[DEFAULT_MODULE_ID].state_dict()
        assert all(torch.equal(theirs[k], v) for k, v in weights.items())
        result = restored.train()
        assert result["num_updates_lifetime"] > 0 and math.isfinite(
            result["learners"][DEFAULT_MODULE_ID]["dreamer/value_loss"]
        )
    finally:
        restored.stop()
