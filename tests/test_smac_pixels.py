"""Pixel SMAC (Alg. 2): module components on fake sequences, then real rendering + real Ray (tiny preset)."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

from smac_rllib.core import estimators
from smac_rllib.algorithms import SMACConfig
from smac_rllib.objectives.losses import LOG_W, Q_PI, Q_PRED

OBS_SPACE = gym.spaces.Box(0, 255, (64, 64, 3), np.uint8)
ACT_SPACE = gym.spaces.Box(-1, 1, (2,), np.float32)
SPACES = {"__env__": (OBS_SPACE, ACT_SPACE), DEFAULT_MODULE_ID: (OBS_SPACE, ACT_SPACE)}
B, T, K = 3, 6, 4
TINY = dict(
    world_model_preset="tiny", pixel_hidden_dim=32, actor_layers=2, critic_layers=2, batch_size_B=B, batch_length_T=T
)


def pixel_config(env: str = "dmc/cartpole-swingup", **training) -> SMACConfig:
    kw = dict(TINY, num_particles=K)
    kw.update(training)
    env_config = {"from_pixels": True, "fast_render": True, "seed": 0}
    return SMACConfig().environment(env, env_config=env_config).training(**kw)


def fake_sequences(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    is_first = np.zeros((B, T), bool)
    is_first[:, 0] = True
    is_first[1, 3] = True  # a new episode starts inside row 1
    return {
        "obs": rng.integers(0, 256, (B, T, 64, 64, 3), dtype=np.uint8),
        "actions": rng.uniform(-1, 1, (B, T, 2)).astype(np.float32),
        "rewards": rng.uniform(0, 1, (B, T)).astype(np.float32),
        "is_first": is_first,
        "is_terminated": np.zeros((B, T), bool),
    }


def build_module(inference_only=False, **training):
    module = pixel_config(**training).get_rl_module_spec(spaces=SPACES, inference_only=inference_only).build()
    if not inference_only:
        module.make_target_networks()
    return module


def test_inference_only_copy_is_encoder_rssm_and_actor():
    runner = build_module(inference_only=True)
    assert not hasattr(runner.world_model, "decoder") and not hasattr(runner, "qf")
    full = build_module()
    runner.set_state(full.get_state(inference_only=True))  # what sync_weights sends to env runners
    assert not any(
        k.startswith(("world_model.decoder", "qf", "target_qf")) for k in full.get_state(inference_only=True)
    )


def test_env_runner_state_is_carried_and_reset_at_episode_start():
    module = build_module(inference_only=True)
    obs = torch.from_numpy(fake_sequences()["obs"][:2, :1])  # (B=2, T=1, H, W, C) as RLlib's stateful connectors give
    initial = {k: v.expand(2, *v.shape) for k, v in module.get_initial_state().items()}
    first = module.forward_inference({Columns.OBS: obs, Columns.STATE_IN: initial, "is_first": torch.ones(2, 1)})
    assert first[Columns.ACTIONS].shape == (2, 1, 2)
    state_out = first[Columns.STATE_OUT]
    assert state_out["deter"].abs().sum() > 0  # the belief moved
    carried = module.forward_inference({Columns.OBS: obs, Columns.STATE_IN: state_out, "is_first": torch.zeros(2, 1)})
    assert not torch.allclose(carried[Columns.STATE_OUT]["deter"], state_out["deter"])  # the state was used
    garbage = {k: torch.randn_like(v) * 5 for k, v in state_out.items()}
    reset = module.forward_inference({Columns.OBS: obs, Columns.STATE_IN: garbage, "is_first": torch.ones(2, 1)})
    torch.testing.assert_close(reset[Columns.STATE_OUT]["deter"], state_out["deter"])  # is_first wipes the old belief
    torch.testing.assert_close(reset[Columns.ACTIONS], first[Columns.ACTIONS])
    # exploration samples pi + collection noise within [-1, 1]
    explore = module.forward_exploration({Columns.OBS: obs, Columns.STATE_IN: initial, "is_first": torch.ones(2, 1)})
    assert explore[Columns.ACTIONS].abs().max() <= 1.0


def _single_env_batch(batch: dict, i: int) -> dict:
    """Env ``i`` of a batched acting input, as if the runner had one env."""
    row = lambda v: {s: t[i : i + 1] for s, t in v.items()} if isinstance(v, dict) else v[i : i + 1]  # noqa: E731
    return {k: row(v) for k, v in batch.items()}


def test_batched_acting_over_envs_matches_one_env_at_a_time():
    """One forward for n envs (num_envs_per_env_runner=n) = n one-env forwards: actions, beliefs, is_first resets."""
    module = build_module(inference_only=True, world_model_preset="small")
    n = 3
    obs = torch.from_numpy(np.random.default_rng(1).integers(0, 256, (n, 1, 64, 64, 3), dtype=np.uint8))
    state_in = {k: torch.randn(n, *v.shape) for k, v in module.get_initial_state().items()}
    batch = {Columns.OBS: obs, Columns.STATE_IN: state_in, "is_first": torch.tensor([[1.0], [0.0], [0.0]])}
    together = module.forward_inference(batch)
    for i in range(n):
        alone = module.forward_inference(_single_env_batch(batch, i))
        torch.testing.assert_close(alone[Columns.ACTIONS], together[Columns.ACTIONS][i : i + 1], rtol=1e-5, atol=1e-6)
        for key, value in alone[Columns.STATE_OUT].items():
            torch.testing.assert_close(value, together[Columns.STATE_OUT][key][i : i + 1], rtol=1e-5, atol=1e-6)
    # exploration: the same draws from the global RNG as the full policy sample (log-weights dropped)
    feat = torch.randn(n, module.world_model.feat_dim)
    torch.manual_seed(0)
    sampled = module.actor.sample_given_latents(feat.unsqueeze(0)).action_B_A
    torch.manual_seed(0)
    torch.testing.assert_close(module.actor.sample_action(feat), sampled, rtol=0, atol=0)


def test_env_runner_copy_is_channels_last_in_eval_mode_and_computes_the_same():
    """docs/design.md §4 (vectorized acting): layout and mode are acting-speed settings, not different numbers."""
    runner = build_module(inference_only=True, world_model_preset="small")
    full = build_module(world_model_preset="small")
    runner.set_state(full.get_state(inference_only=True))  # sync_weights copies in place: the layout stays
    weight = runner.world_model.encoder.convs[0].weight
    assert weight.is_contiguous(memory_format=torch.channels_last) and not runner.training
    assert all(not m.training for m in runner.modules())
    obs = torch.from_numpy(fake_sequences()["obs"][:2, :1])
    initial = {k: v.expand(2, *v.shape) for k, v in runner.get_initial_state().items()}
    batch = {Columns.OBS: obs, Columns.STATE_IN: initial, "is_first": torch.ones(2, 1)}
    torch.testing.assert_close(runner.forward_inference(batch), full.forward_inference(batch), rtol=1e-5, atol=1e-6)
    assert not runner.training  # RLlib's eval()/train() around acting leaves the runner copy in eval mode
    full.eval()
    assert all(not m.training for m in full.modules())
    full.train()  # the learner's forward_train: every submodule back in train mode
    assert all(m.training for m in full.modules())


def test_pixel_frames_from_the_kept_camera_equal_physics_render():
    """DMCEnv keeps one dm_control Camera per size (docs/design.md §4): same pixels as ``physics.render``, and
    each observation owns its memory (the camera's buffer is overwritten by the next frame)."""
    from smac_rllib.envs import make_env

    env = make_env("dmc/cartpole-swingup", {"from_pixels": True, "fast_render": True, "seed": 0, "time_limit": 0.1})
    rng = np.random.default_rng(0)
    obs, _ = env.reset()
    frames = [obs]
    for _ in range(12):  # 5 agent steps per episode: crosses resets
        obs, _, terminated, truncated, _ = env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
        np.testing.assert_array_equal(obs, env.physics.render(height=64, width=64, camera_id=env.camera_id))
        frames.append(obs)
        if terminated or truncated:
            obs, _ = env.reset()
            np.testing.assert_array_equal(obs, env.physics.render(height=64, width=64, camera_id=env.camera_id))
    assert len({f.tobytes() for f in frames}) > 1 and all(f.flags.owndata for f in frames)
    env.close()


@pytest.mark.parametrize("particle_mode", ["history", "step"])
def test_train_forward_detaches_the_belief_and_marginalizes_over_particles(particle_mode):
    module = build_module(particle_mode=particle_mode)
    batch = {k: torch.from_numpy(v) for k, v in fake_sequences().items()}
    out = module.forward_train(batch)
    assert out[LOG_W].shape == (K + 1, B * T) and out[Q_PI].shape == (B * T,)
    assert out[Q_PRED].shape == (2, K + 1, B, T - 1)  # every particle, the full (B, T-1) grid of transitions ...
    assert torch.equal(out["valid_next_B"], ~batch["is_first"][:, 1:])  # ... those across an episode start masked out
    assert out["particle_feat_std"] > 0  # the K particles differ
    wm_params = list(module.world_model.parameters())
    actor_terms = out[Q_PI].sum() + estimators.mlmc_entropy(out[LOG_W]).sum() + out[Q_PRED].sum()
    grads = torch.autograd.grad(actor_terms, wm_params, allow_unused=True)
    assert all(g is None for g in grads), "actor/critic gradients reached the world model (Alg. 2 detaches it)"
    (wm_grad,) = torch.autograd.grad(out["world_model_loss"], [module.world_model.encoder.convs[0].weight])
    assert wm_grad.abs().sum() > 0


def test_latent_sac_k0_has_no_particles():
    module = build_module(num_particles=0)
    out = module.forward_train({k: torch.from_numpy(v) for k, v in fake_sequences().items()})
    assert out[LOG_W].shape == (1, B * T) and float(out["particle_feat_std"]) == 0.0


def test_pixel_learner_update_trains_every_component():
    learner = pixel_config().build_learner(spaces=SPACES)
    module = learner.module[DEFAULT_MODULE_ID]
    before = {k: v.detach().clone() for k, v in module.state_dict().items()}
    batch = MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(fake_sequences())}, env_steps=B * T)
    results = learner.update(batch=batch, timesteps={"num_env_steps_sampled_lifetime": 10_000})
    after = module.state_dict()
    for prefix in (
        "world_model.encoder",
        "world_model.rssm",
        "world_model.decoder",
        "world_model.reward_head",
        "actor",
        "qf",
        "log_alpha",
    ):
        assert any(not torch.equal(before[k], after[k]) for k in before if k.startswith(prefix)), prefix
    metrics = results[DEFAULT_MODULE_ID]
    for key in (
        "world_model/loss",
        "world_model/kl",
        "critic/loss",
        "actor/loss",
        "estimator/entropy_mlmc",
        "gradients/world_model_global_norm",
    ):
        assert math.isfinite(metrics[key].peek()), key


@pytest.mark.parametrize(
    "training, env_config, message",
    [
        (dict(num_particles=6), {}, "num_particles=6 must be 0 or a power of two for estimator='mlmc' (try 4 or 8)"),
        (dict(particle_mode="full"), {}, "particle_mode='full' is unknown; use one of 'history'"),
        (dict(batch_length_T=1), {}, "batch_length_T=1 must be an integer >= 2"),
        (
            dict(world_model_preset="huge"),
            {},
            "world_model_preset='huge' is unknown; use one of 'paper', 'small', 'tiny'",
        ),
        (dict(autocast="fp8"), {}, "autocast='fp8' is unknown"),
        (dict(), {"image_size": 32}, "set image_size: 64"),
    ],
)
def test_pixel_validate_names_the_fix(training, env_config, message):
    config = pixel_config(**training)
    config.env_config.update(env_config)
    with pytest.raises(ValueError) as info:
        config.validate()
    assert message in str(info.value)


def test_pixel_defaults_follow_the_reference():
    config = pixel_config()
    assert (
        config.resolved_updates_per_env_step == 0.2
        and config.resolved("num_steps_sampled_before_learning_starts") == 5000
    )  # 10k frames
    assert (
        config.resolved_initial_alpha == 1.0 and config.resolved_td_entropy == "conditional"
    )  # default.yaml, smac.py:153
    assert (config.critic_particles, config.pixel_actor_head, config.mlmc_average_level0) == ("all", "dreamer", True)
    state = SMACConfig().environment("dmc/cartpole-swingup")
    assert (
        state.resolved_updates_per_env_step == 1.0
        and state.resolved("num_steps_sampled_before_learning_starts") == 5000
    )
    assert state.resolved_initial_alpha == 0.1 and state.resolved_td_entropy == "marginal"  # pytorch_sac, Eq. (10)
    c = SMACConfig()
    assert (
        c.world_model_preset,
        c.particle_mode,
        c.batch_size_B,
        c.batch_length_T,
        c.world_model_lr,
        c.action_noise,
    ) == ("paper", "history", 50, 50, 6e-4, 0.3)


# --- real rendering, real Ray ---------------------------------------------------------------------------
def tiny_run(**training) -> SMACConfig:
    kw = dict(num_steps_sampled_before_learning_starts=100, updates_per_env_step=0.03)
    kw.update(training)
    return (
        pixel_config(**kw)
        .env_runners(rollout_fragment_length=50, num_cpus_per_env_runner=0.5)
        .reporting(min_sample_timesteps_per_iteration=150)
        .debugging(seed=0)
    )


def _assert_pixel_trained(result):
    assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 150
    assert result["num_updates_lifetime"] > 0
    learner = result["learners"][DEFAULT_MODULE_ID]
    for key in ("world_model/loss", "critic/loss", "actor/loss", "alpha/value"):
        assert math.isfinite(learner[key]), key


def test_pixel_smac_trains_with_a_remote_env_runner_and_checkpoints_its_sequence_buffer(ray_local, tmp_path):
    algo = tiny_run(particle_mode="history").env_runners(num_env_runners=1).build_algo()
    try:
        result = algo.train()
        _assert_pixel_trained(result)
        buffer = algo.local_replay_buffer
        assert buffer.get_num_timesteps() >= 150
        stored = buffer.episodes[0]
        assert Columns.STATE_OUT not in stored.extra_model_outputs  # recurrent state is not replayed
        assert np.asarray(stored.get_observations(0)).dtype == np.uint8  # frames stay uint8 in replay
        path = algo.save_to_path(str(tmp_path / "ckpt"))
        size = buffer.get_num_timesteps()
    finally:
        algo.stop()
    restored = tiny_run(particle_mode="history").env_runners(num_env_runners=1).build_algo()
    try:
        restored.restore_from_path(path)
        assert restored.local_replay_buffer.get_num_timesteps() == size
        _assert_pixel_trained(restored.train())
    finally:
        restored.stop()


def test_latent_sac_k0_trains_end_to_end(ray_local):
    algo = tiny_run(num_particles=0).env_runners(num_env_runners=0).build_algo()
    try:
        result = algo.train()
        _assert_pixel_trained(result)
        assert result["learners"][DEFAULT_MODULE_ID]["estimator/particle_feat_std"] == 0.0
    finally:
        algo.stop()


def test_pixel_smac_trains_under_ddp_with_two_learners(ray_local):
    """num_learners=2: each learner gets half of the B sequences; DDP keeps world model, actor and critic equal."""
    # two envs: two episodes at once, one for each learner's replay shard (docs/design.md §8)
    config = tiny_run(particle_mode="step").env_runners(num_env_runners=0, num_envs_per_env_runner=2)
    algo = config.learners(num_learners=2, num_cpus_per_learner=1).build_algo()
    try:
        _assert_pixel_trained(algo.train())
        # the learner threads finish their granted updates (they run on after train() returns)
        algo.wait_for_granted_updates()
        states = algo.learner_group.foreach_learner(
            lambda learner: learner.module[DEFAULT_MODULE_ID].unwrapped().get_state()
        )
        weights = [s.get() if hasattr(s, "get") else s for s in states]
        assert len(weights) == 2 and any(k.startswith("world_model") for k in weights[0])
        for key in weights[0]:
            np.testing.assert_allclose(weights[0][key], weights[1][key], err_msg=key)
    finally:
        algo.stop()
