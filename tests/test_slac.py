"""SLAC (Lee et al. 2020) on our plumbing: the ELBO pieces against hand-computed cases, the actor's history inputs,
the pretraining schedule of the learner, bad settings, the tuned example, and one real run through the CLI
(dm_control rendering at 32x32, tiny nets) whose checkpoint restores and trains on."""

from __future__ import annotations

import glob
import math
import os

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.policy.sample_batch import SampleBatch

from smac_rllib.algorithms import SLACConfig
from smac_rllib.models.slac_model import (
    Posterior,
    SLACModel,
    SLACModelConfig,
    filter_before_first_step,
    gaussian_kl,
    gaussian_log_lik,
    history_inputs,
)

TINY_YAML = os.path.join(os.path.dirname(__file__), "data", "slac_tiny.yaml")
OBS = gym.spaces.Box(0, 255, (32, 32, 3), np.uint8)
ACT = gym.spaces.Box(-1, 1, (2,), np.float32)
SPACES = {"__env__": (OBS, ACT), DEFAULT_MODULE_ID: (OBS, ACT)}
B, L = 6, 3  # sequences, sequence_length (rows of L + 1 steps)
TINY = dict(
    sequence_length=L, latent1_size=4, latent2_size=8, base_depth=4, hidden_dim=16, batch_size_B=B, model_batch_size=2
)


def tiny_config(**training) -> SLACConfig:
    env_config = {"from_pixels": True, "image_size": 32}
    return (
        SLACConfig()
        .environment(observation_space=OBS, action_space=ACT, env_config=env_config)
        .training(**(TINY | training))
    )


def fake_rows(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    is_first = np.zeros((B, L + 1), bool)
    is_first[:, 0] = True
    is_first[1, 2] = True  # an episode starts inside row 1
    is_first[2, L] = True  # row 2's last transition crosses episodes: no critic/actor target there
    return {
        "obs": rng.integers(0, 256, (B, L + 1, 32, 32, 3), dtype=np.uint8),
        "actions": rng.uniform(-1, 1, (B, L + 1, 2)).astype(np.float32),
        "rewards": rng.uniform(0, 1, (B, L + 1)).astype(np.float32),
        "is_first": is_first,
        "is_terminated": np.zeros((B, L + 1), bool),
    }


# --- the ELBO's pieces -----------------------------------------------------------------------------------------
def test_kl_of_two_known_gaussians():
    # KL(N(1, 2^2) || N(0, 1)) = log(1/2) + (4 + 1) / 2 - 1/2;  KL(N(0, 1) || N(0, 1)) = 0; summed over the last dim
    kl = gaussian_kl(torch.tensor([[1.0, 0.0]]), torch.tensor([[2.0, 1.0]]), torch.zeros(1, 2), torch.ones(1, 2))
    torch.testing.assert_close(kl, torch.tensor([math.log(0.5) + 2.5 - 0.5]))
    # KL(N(0, 1) || N(3, 0.5^2)) = log(0.5) + (1 + 9) / (2 * 0.25) - 1/2
    kl = gaussian_kl(torch.zeros(1), torch.ones(1), torch.tensor([3.0]), torch.tensor([0.5]))
    torch.testing.assert_close(kl, torch.tensor(math.log(0.5) + 10 / 0.5 - 0.5))


def test_decoder_log_likelihood_is_a_gaussian_with_the_originals_std():
    x, mean, std = torch.tensor([[0.2, 0.9], [0.0, 1.0]]), torch.tensor([[0.5, 0.5], [0.5, 0.5]]), math.sqrt(0.1)
    by_hand = sum(
        -0.5 * ((xi - 0.5) / std) ** 2 - math.log(std) - 0.5 * math.log(2 * math.pi) for xi in (0.2, 0.9, 0.0, 1.0)
    )
    torch.testing.assert_close(gaussian_log_lik(x, mean, std, event_dims=2), torch.tensor(by_hand))
    assert gaussian_log_lik(x, mean, std).shape == (2, 2)


def test_model_loss_assembles_the_elbo_with_resets_and_reward_masks():
    torch.manual_seed(0)
    model = SLACModel(2, SLACModelConfig(base_depth=4, latent1_size=3, latent2_size=5, image_size=32))
    rows = fake_rows()
    obs, act, rew, first = (torch.as_tensor(rows[k]) for k in ("obs", "actions", "rewards", "is_first"))
    feat = model.encoder(obs)
    post = model.posterior(feat, act, first)
    loss, metrics, _ = model.loss(obs, act, rew, first, feat_B_T_F=feat, post=post)
    elbo = torch.zeros(B)
    for b in range(B):
        for t in range(L + 1):
            if t == 0 or first[b, t]:  # p(z1_0) = N(0, I), also where a new episode starts
                prior_mean, prior_std = torch.zeros(3), torch.ones(3)
            else:  # p(z1_t | z2_t-1, a_t-1)
                prior_mean, prior_std = model.z1_prior(post.z2[b, t - 1], act[b, t - 1])
            elbo[b] -= gaussian_kl(post.z1_mean[b, t], post.z1_std[b, t], prior_mean, prior_std)
            image_mean = model.decoder(post.z[b, t])
            elbo[b] += gaussian_log_lik(obs[b, t].float() / 255, image_mean, math.sqrt(0.1), event_dims=3)
            if t < L and not first[b, t + 1]:  # p(r | z_t, a_t, z_t+1); our rewards[t + 1] is that transition's
                r_mean, r_std = model.reward(post.z[b, t], act[b, t], post.z[b, t + 1])
                elbo[b] += gaussian_log_lik(rew[b, t + 1], r_mean[0], r_std[0])
    torch.testing.assert_close(loss, -elbo.mean(), rtol=1e-4, atol=1e-3)
    assert set(metrics) >= {"model/kl_z1", "model/image_log_lik", "model/reward_log_lik"}


def test_posterior_restarts_where_a_new_episode_begins():
    torch.manual_seed(0)
    model = SLACModel(2, SLACModelConfig(base_depth=4, latent1_size=3, latent2_size=5, image_size=32))
    rows = fake_rows()
    feat = torch.randn(B, L + 1, model.feature_dim)
    post = model.posterior(feat, torch.as_tensor(rows["actions"]), torch.as_tensor(rows["is_first"]))
    first_mean, _ = model.z1_first_posterior(feat[1, 2])  # q(z1_0 | x) at row 1's new episode
    torch.testing.assert_close(post.z1_mean[1, 2], first_mean)
    assert isinstance(post, Posterior) and post.z.shape == (B, L + 1, 3 + 5)


# --- the actor's history ---------------------------------------------------------------------------------------
def test_history_inputs_repeat_the_episode_start_and_zero_earlier_actions():
    F_, A = 2, 1
    feat = (
        torch.arange(4 * F_, dtype=torch.float32).reshape(1, 4, F_).repeat(2, 1, 1)
    )  # frame t has features (2t, 2t+1)
    act = torch.tensor([1.0, 2.0, 3.0, 4.0]).reshape(1, 4, A).repeat(2, 1, 1)
    first = torch.tensor([[True, False, False, False], [True, False, True, False]])
    f, a = filter_before_first_step(feat, act, first)
    torch.testing.assert_close(f[0], feat[0])  # no episode start inside the window: unchanged
    torch.testing.assert_close(f[1], feat[1, [2, 2, 2, 3]])  # steps before the start at t = 2 repeat frame 2
    torch.testing.assert_close(a[1].squeeze(-1), torch.tensor([0.0, 0.0, 3.0, 4.0]))
    h = history_inputs(feat, act, first)
    assert h.shape == (2, 4 * F_ + 3 * A)  # L frames of features and the L - 1 actions between them
    torch.testing.assert_close(h[1, 8:], torch.tensor([0.0, 0.0, 3.0]))


def test_acting_history_matches_the_training_inputs_and_rolls():
    module = tiny_config().get_rl_module_spec(spaces=SPACES, inference_only=True).build()
    assert [n for n, _ in module.model.named_children()] == ["encoder"]  # runners: encoder + actor only
    rows = fake_rows()
    obs = torch.as_tensor(rows["obs"][:2, :1])
    state = {k: v[None].expand(2, *v.shape) for k, v in module.get_initial_state().items()}
    batch = {"obs": obs, "state_in": state, "is_first": torch.ones(2, 1)}
    x, frames, actions, _ = module._history(batch)
    assert x.shape == (2, L * module.model.feature_dim + (L - 1) * 2)  # L x F features + (L-1) x A actions
    window = obs.expand(2, L, 32, 32, 3)  # a new episode: its first frame L times, zero actions
    feat = module.model.encoder(window)
    expected = history_inputs(feat, torch.zeros(2, L, 2), torch.tensor([[False] * (L - 1) + [True]] * 2))
    torch.testing.assert_close(x, expected)
    out = module.forward_exploration(batch)
    assert out["actions"].shape == (2, 1, 2) and float(out["actions"].abs().max()) <= 1
    nxt = torch.as_tensor(rows["obs"][:2, 1:2])
    out2 = module.forward_exploration({"obs": nxt, "state_in": out["state_out"], "is_first": torch.zeros(2, 1)})
    torch.testing.assert_close(out2["state_out"]["frames"][:, -1], nxt[:, 0])  # the newest frame is last
    torch.testing.assert_close(out2["state_out"]["actions"][:, -2], out["actions"][:, 0])


# --- the learner: pretraining first, then every component -----------------------------------------------------
def test_model_pretraining_updates_train_the_model_only_then_everything():
    """The model-update count is kept by SLAC's one update (``SLACUpdate.step``), on the device."""
    torch.manual_seed(0)
    learner = tiny_config(initial_model_train_steps=2).build_learner(spaces=SPACES)
    module = learner.module[DEFAULT_MODULE_ID].unwrapped()
    batch = SampleBatch(fake_rows()).as_multi_agent()

    def snapshot():
        return {
            name: [p.detach().clone() for p in getattr(module, name).parameters()] for name in ("model", "qf", "policy")
        }

    def changed(before):
        return {
            name: any(
                not torch.equal(a, b) for a, b in zip(before[name], getattr(module, name).parameters(), strict=True)
            )
            for name in before
        }

    for step in range(2):
        before = snapshot()
        result = learner.update(batch=batch, timesteps={"num_env_steps_sampled_lifetime": 1})[DEFAULT_MODULE_ID]
        assert changed(before) == {"model": True, "qf": False, "policy": False}, step
        assert "critic/loss" not in result and math.isfinite(float(result["model/loss"]))
    assert int(module.model_updates_done) == 2
    before, alpha = snapshot(), float(module.log_alpha.detach())
    result = learner.update(batch=batch, timesteps={"num_env_steps_sampled_lifetime": 1})[DEFAULT_MODULE_ID]
    assert changed(before) == {"model": True, "qf": True, "policy": True} and float(module.log_alpha.detach()) != alpha
    assert int(module.model_updates_done) == 2
    for key in ("critic/loss", "actor/loss", "alpha/value", "actor/entropy", "model/kl_z1"):
        assert math.isfinite(float(result[key])), key
    assert float(result["critic/valid_fraction"]) == pytest.approx(5 / 6)  # row 2's last transition crosses episodes


# --- settings ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "training,env_config,message",
    [
        ({"sequence_length": 1}, {}, r"sequence_length=1 must be an integer >= 2 .*original: 8"),
        ({"latent1_size": 0}, {}, r"latent1_size=0 must be an integer >= 1 \(original: 32\)"),
        ({"latent2_size": 0}, {}, r"latent2_size=0 must be an integer >= 1 \(original: 256\)"),
        (
            {"initial_model_train_steps": -1},
            {},
            r"initial_model_train_steps=-1 must be an integer >= 0 \(original: 100000",
        ),
        ({"model_lr": 0.0}, {}, r"model_lr=0.0 must be a number > 0 \(original: 1e-4\)"),
        ({}, {"from_pixels": False}, r"SLAC learns from pixels: set env_config from_pixels: true"),
        ({}, {"image_size": 40}, r"image_size=40: SLAC's conv encoder/decoder need a side divisible by 16"),
    ],
)
def test_bad_settings_raise_one_line_errors_naming_the_fix(training, env_config, message):
    config = (
        SLACConfig()
        .environment("dmc/cartpole-swingup", env_config={"from_pixels": True} | env_config)
        .training(**training)
    )
    with pytest.raises(ValueError, match=message) as info:
        config.validate()
    assert "\n" not in str(info.value)


def test_defaults_and_tuned_example_follow_the_original():
    from smac_rllib.cli import yaml_loader

    config = SLACConfig()
    assert (config.sequence_length, config.batch_length_T, config.latent1_size, config.latent2_size) == (8, 9, 32, 256)
    assert (config.batch_size_B, config.model_batch_size, config.model_lr, config.actor_lr) == (256, 32, 1e-4, 3e-4)
    assert (config.initial_model_train_steps, config.num_steps_sampled_before_learning_starts) == (100_000, 10_000)
    assert config.replay_buffer_config["capacity"] == 100_000 and config.initial_alpha == 1.0
    [spec] = yaml_loader.load_experiments("tuned_examples/slac_pixels.yaml")
    [built] = spec.configs
    assert spec.run == "SLAC" and type(built).__name__ == "SLACConfig"
    assert built.env_config["action_repeat"] == 4 and built.initial_model_train_steps == 100_000


# --- integration: `rllib train file` for 2 iterations, then restore the checkpoint and train on -------------------
def test_trains_through_the_cli_and_its_checkpoint_restores_and_continues(tmp_path):
    import pickle

    import ray

    from smac_rllib.cli.main import main

    if ray.is_initialized():
        ray.shutdown()  # the CLI starts its own local Ray
    try:
        assert main(["train", "file", TINY_YAML, "--storage-path", str(tmp_path), "--no-plot"]) == 0
        [trial] = glob.glob(str(tmp_path / "slac-tiny" / "SLAC_*"))
        checkpoint = sorted(glob.glob(os.path.join(trial, "checkpoint_*")))[-1]
        with open(os.path.join(checkpoint, "algorithm_state.pkl"), "rb") as f:
            state = pickle.load(f)
        assert "slac_pretrain_granted" not in state  # one update rule owes the pretraining in both loops
        assert state["env_steps_stored"] >= 200 and state["updates_done"] == 5 + int(
            0.1 * (state["env_steps_stored"] - 50)
        )
        from smac_rllib.cli.yaml_loader import load_experiments

        [spec] = load_experiments(TINY_YAML)
        algo = spec.configs[0].copy(copy_frozen=False).build_algo()
        try:
            algo.restore_from_path(checkpoint)
            module = algo.learner_group._learner.module[DEFAULT_MODULE_ID].unwrapped()
            assert int(module.model_updates_done) == 5  # the pretraining is not repeated
            assert algo.local_replay_buffer.get_num_timesteps() == state["env_steps_stored"]
            result = algo.train()
            assert result["num_updates_lifetime"] > state["updates_done"]
            learner = result["learners"][DEFAULT_MODULE_ID]
            for key in ("model/loss", "critic/loss", "actor/loss", "alpha/value"):
                assert math.isfinite(learner[key]), key
            assert int(module.model_updates_done) == 5
        finally:
            algo.stop()
    finally:
        ray.shutdown()


def test_synchronous_loop_runs_the_pretraining_once_before_the_rl_updates(ray_local):
    from smac_rllib.cli.yaml_loader import load_experiments

    [spec] = load_experiments(TINY_YAML)
    config = spec.configs[0].copy(copy_frozen=False).training(async_learning=False).evaluation(evaluation_interval=None)
    algo = config.build_algo()
    try:
        for _ in range(2):
            result = algo.train()
        stored = algo.env_steps_stored
        assert algo.update_rule.pretrain_updates == 5  # the synchronous loop runs the same rule as the async one
        assert result["num_updates_lifetime"] == 5 + int(0.1 * (stored - 50))
        assert int(algo.learner_group._learner.module[DEFAULT_MODULE_ID].unwrapped().model_updates_done) == 5
        assert math.isfinite(result["learners"][DEFAULT_MODULE_ID]["critic/loss"])
    finally:
        algo.stop()
