"""The paper's state baselines on our plumbing: TD3, SACFlow (Flow2/Flow4), SACMoE (MOE5/MOE10).

Loss pieces against hand-computed cases (TD3's smoothed target, the flow's log-det against an autograd Jacobian,
the mixture's log-likelihood against numpy), parameter counts against the paper's statement, bad settings, and
each one trained 2 iterations on dm_control with a checkpoint round trip (real RLlib, real dm_control).
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

from smac_rllib.algorithms import (
    SACBaselineConfig,
    SACFlowConfig,
    SACMoEConfig,
    SMACConfig,
    TD3Config,
    param_counts,
)
from smac_rllib.algorithms.baselines.sac_moe import frequency_gate_loss
from smac_rllib.algorithms.baselines.td3 import smoothed_target_action, td3_target
from smac_rllib.models.flows import ConditionalRealNVP, RealNVPTanhPolicy, coupling_masks
from smac_rllib.models.mixture import GaussianMixtureTanhPolicy, tanh_mixture_log_prob

OBS = gym.spaces.Box(-np.inf, np.inf, (5,), np.float32)
ACT = gym.spaces.Box(-1, 1, (2,), np.float32)
TS = {"num_env_steps_sampled_lifetime": 10**6}


def _randomize(module: torch.nn.Module, scale: float = 0.3, seed: int = 0) -> None:
    """Non-trivial weights (the flow's conditioners start at zero = the identity)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(scale * torch.randn(p.shape, generator=gen))


def _batch(size: int = 8, seed: int = 0) -> MultiAgentBatch:
    rng = np.random.default_rng(seed)
    data = {
        "obs": rng.normal(size=(size, 5)).astype(np.float32),
        "new_obs": rng.normal(size=(size, 5)).astype(np.float32),
        "actions": rng.uniform(-1, 1, (size, 2)).astype(np.float32),
        "rewards": rng.uniform(size=size).astype(np.float32),
        "terminateds": np.arange(size) % 3 == 0,
        "truncateds": np.zeros(size, bool),
        "weights": np.ones(size, np.float32),
        "n_step": np.ones(size, np.int64),
    }
    return MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(data)}, env_steps=size)


def _learner(config):
    spaces = {"__env__": (OBS, ACT), DEFAULT_MODULE_ID: (OBS, ACT)}
    return (
        config.environment(observation_space=OBS, action_space=ACT)
        .training(train_batch_size_per_learner=8)
        .build_learner(spaces=spaces)
    )


# --- TD3 -------------------------------------------------------------------------------------------------
def test_td3_smoothed_target_clips_the_noise_then_the_action():
    target_action = torch.tensor([[0.9, -0.2], [0.0, -0.95]])
    noise = torch.tensor([[0.7, -0.3], [-0.1, -0.6]])  # 0.7 and -0.6 beyond the clip 0.5
    smoothed = smoothed_target_action(target_action, noise, noise_clip=0.5)
    torch.testing.assert_close(smoothed, torch.tensor([[1.0, -0.5], [-0.1, -1.0]]))  # 0.9+0.5 -> 1; -0.95-0.5 -> -1
    # y = r + gamma (1 - d) min(Q1', Q2')
    q_next = torch.tensor([[2.0, -1.0], [3.0, -4.0]])  # (twin, batch)
    y = td3_target(torch.tensor([1.0, 0.5]), torch.tensor([False, True]), q_next, discount_B=0.9)
    torch.testing.assert_close(y, torch.tensor([1.0 + 0.9 * 2.0, 0.5]))


def test_td3_critic_loss_on_a_fixed_batch_and_delayed_actor_and_targets():
    learner = _learner(TD3Config().training(hidden_dim=16, target_noise=0.0, policy_delay=2))
    module = learner.module[DEFAULT_MODULE_ID].unwrapped()
    batch = _batch()
    cols = {k: torch.as_tensor(v) for k, v in batch.policy_batches[DEFAULT_MODULE_ID].items()}
    # hand-computed critic loss (noise 0: a' = mu_bar(x')): sum over the twins of the MSE to y
    with torch.no_grad():
        next_a = torch.tanh(module.target_policy(cols["new_obs"]))
        q_next = torch.minimum(*module.target_qf(cols["new_obs"], next_a))
        y = cols["rewards"] + 0.99 * (~cols["terminateds"]).float() * q_next
        q1, q2 = module.qf(cols["obs"], cols["actions"])
        expected = ((q1 - y) ** 2).mean() + ((q2 - y) ** 2).mean()
    snapshot = {k: v.clone() for k, v in module.state_dict().items()}
    result = learner.update(batch=batch, timesteps=TS)  # update 1: critic only
    assert float(result[DEFAULT_MODULE_ID]["critic/loss"]) == pytest.approx(float(expected), rel=1e-5)
    assert "actor/loss" not in result[DEFAULT_MODULE_ID]
    state = {k: v.clone() for k, v in module.state_dict().items()}
    changed = {k for k in state if not torch.equal(state[k], snapshot[k])}
    assert changed and all(k.startswith("qf.") for k in changed)  # actor and all targets untouched
    learner.update(batch=batch, timesteps=TS)  # update 2: critic, actor and targets
    state2 = module.state_dict()
    for prefix in ("policy.", "target_policy.", "target_qf."):
        assert any(not torch.equal(state2[k], state[k]) for k in state2 if k.startswith(prefix)), prefix


# --- the flow ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("action_dim", [1, 3])
def test_flow_log_det_matches_the_autograd_jacobian(action_dim):
    torch.manual_seed(0)
    flow = ConditionalRealNVP(cond_dim=4, action_dim=action_dim, num_blocks=3, hidden_dim=8)
    _randomize(flow)
    x, z = torch.randn(5, 4), torch.randn(5, action_dim)
    u, log_det = flow(z, x)
    for i in range(5):
        jac = torch.autograd.functional.jacobian(lambda zi, i=i: flow(zi[None], x[i : i + 1])[0][0], z[i])
        torch.testing.assert_close(log_det[i], torch.linalg.slogdet(jac)[1], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(flow.inverse(u, x), z, atol=1e-5, rtol=1e-5)
    # the policy's log-likelihood = base density - log|det d tanh(f(z))/dz|, the whole Jacobian by autograd
    policy = RealNVPTanhPolicy(4, action_dim, 3, 8)
    _randomize(policy)
    u, log_prob = policy.pre_tanh_and_log_prob(x, z)
    for i in range(5):
        jac = torch.autograd.functional.jacobian(
            lambda zi, i=i: torch.tanh(policy.flow(zi[None], x[i : i + 1])[0][0]), z[i]
        )
        base = torch.distributions.Normal(0.0, 1.0).log_prob(z[i]).sum()
        torch.testing.assert_close(log_prob[i], base - torch.linalg.slogdet(jac)[1], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(policy.log_prob(x, torch.tanh(u)), log_prob, atol=1e-3, rtol=1e-4)


def test_flow_density_integrates_to_one_and_masks_alternate():
    policy = RealNVPTanhPolicy(obs_dim=2, action_dim=1, num_blocks=2, hidden_dim=8)
    _randomize(policy, scale=0.2)
    a = torch.linspace(-0.999, 0.999, 20001)[:, None]
    density = policy.log_prob(torch.tensor([[0.3, -0.7]]).expand(len(a), 2), a).exp()
    assert float(torch.trapezoid(density.detach(), a[:, 0])) == pytest.approx(1.0, abs=2e-3)
    assert [m.tolist() for m in coupling_masks(3, 2)] == [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    fresh = RealNVPTanhPolicy(obs_dim=2, action_dim=2, num_blocks=2)  # identity at init: tanh(z), z ~ N(0, I)
    torch.testing.assert_close(fresh.deterministic_action(torch.randn(3, 2)), torch.zeros(3, 2))


# --- the mixture ---------------------------------------------------------------------------------------------
def test_mixture_log_likelihood_matches_numpy():
    rng = np.random.default_rng(0)
    B, K, A = 4, 3, 2
    u = rng.normal(size=(B, A))
    w = rng.dirichlet(np.ones(K), size=B)
    mean, log_std = rng.normal(size=(B, K, A)), rng.uniform(-1, 0.5, size=(B, K, A))
    std = np.exp(log_std)
    gauss = np.exp(-0.5 * ((u[:, None] - mean) / std) ** 2) / (np.sqrt(2 * np.pi) * std)  # (B, K, A)
    expected = np.log((w * gauss.prod(-1)).sum(-1)) - np.log(1 - np.tanh(u) ** 2).sum(-1)
    got = tanh_mixture_log_prob(*(torch.as_tensor(v) for v in (u, np.log(w), mean, log_std)))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
    # the gate loss: mean over states and experts of (w - onehot(best))^2
    log_w = torch.log(torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]]))
    expected_gate = ((0.5 - 1) ** 2 + 0.3**2 + 0.2**2 + 0.1**2 + 0.1**2 + (0.8 - 1) ** 2) / 6
    assert float(frequency_gate_loss(log_w, torch.tensor([0, 2]))) == pytest.approx(expected_gate)


def test_mixture_samples_follow_its_density_and_the_actor_trains_the_best_expert():
    torch.manual_seed(0)
    policy = GaussianMixtureTanhPolicy(obs_dim=3, action_dim=1, num_experts=4, hidden_dim=8)
    _randomize(policy, scale=0.5)
    obs = torch.randn(1, 3)
    action, _ = policy.rsample(obs.expand(50000, 3))
    edges = np.linspace(-1, 1, 11)
    hist = np.histogram(action.detach().numpy()[:, 0], bins=edges)[0] / 50000
    # bin probabilities in closed form:
    # sum_k w_k [Phi((atanh(a1) - mu_k) / sigma_k) - Phi((atanh(a0) - mu_k) / sigma_k)]
    log_w, mean, log_std = (t.detach()[0] for t in policy.params(obs))
    normal = torch.distributions.Normal(mean[:, 0], log_std[:, 0].exp())
    u_edges = torch.atanh(torch.as_tensor(edges, dtype=torch.float64).clamp(-1 + 1e-12, 1 - 1e-12)).float()
    cdf = torch.stack([(log_w.exp() * normal.cdf(u)).sum() for u in u_edges])
    np.testing.assert_allclose(hist, (cdf[1:] - cdf[:-1]).numpy(), atol=0.01)
    # MoE actor (frequency approximate gradient): Q from every expert, the best one's log pi, a gate loss
    learner = _learner(SACMoEConfig().training(num_experts=3, hidden_dim=16))
    module = learner.module[DEFAULT_MODULE_ID].unwrapped()
    terms = module.actor_terms(torch.randn(6, 5))
    assert terms["q_pi_B"].shape == (6,) and terms["logp_B"].shape == (6,) and terms["extra_actor_loss"].ndim == 0
    result = learner.update(batch=_batch(), timesteps=TS)[DEFAULT_MODULE_ID]
    assert all(math.isfinite(float(result[k])) for k in ("critic/loss", "actor/loss", "actor/gate_loss", "alpha/loss"))


def test_sac_flow_learner_loss_on_a_fixed_batch():
    learner = _learner(SACFlowConfig().training(flow_blocks=2, hidden_dim=16))
    module = learner.module[DEFAULT_MODULE_ID].unwrapped()
    torch.manual_seed(1)
    batch = _batch()
    cols = {k: torch.as_tensor(v) for k, v in batch.policy_batches[DEFAULT_MODULE_ID].items()}
    torch.manual_seed(2)
    fwd = module.forward_train(cols)
    from smac_rllib.algorithms.baselines.policy_sac.policy_sac_learner import policy_sac_losses

    terms, _ = policy_sac_losses(
        module, learner.config, fwd, cols, target_entropy=float(learner.target_entropy[DEFAULT_MODULE_ID])
    )
    loss = sum(terms.values())
    alpha = 0.1
    y = cols["rewards"] + 0.99 * (~cols["terminateds"]).float() * (
        fwd["q_next_target_T2_B"].min(0).values - alpha * fwd["logp_next_B"]
    )
    critic = ((fwd["q_pred_T2_B"] - y) ** 2).mean(1).sum()
    actor = (alpha * fwd["logp_B"] - fwd["q_pi_B"]).mean()
    temperature = math.log(alpha) * (-fwd["logp_B"] - (-2.0)).mean()  # target entropy -|A| = -2
    torch.testing.assert_close(loss, critic + actor + temperature, rtol=1e-5, atol=1e-5)


# --- parameter counts (the paper: MoE ~ SAC ~ SMAC; Flow2 ~2x, Flow4 ~4x the SAC actor) ------------------------
@pytest.mark.parametrize("obs_dim,action_dim", [(17, 6), (5, 1)])  # cheetah-run, cartpole
def test_parameter_counts_match_the_papers_statement(obs_dim, action_dim):
    obs, act = gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32), gym.spaces.Box(-1, 1, (action_dim,), np.float32)
    count = {
        name: param_counts(config, obs, act)
        for name, config in {
            "SMAC": SMACConfig(),
            "SAC": SACBaselineConfig(),
            "TD3": TD3Config(),
            "Flow2": SACFlowConfig().training(flow_blocks=2),
            "Flow4": SACFlowConfig().training(flow_blocks=4),
            "MOE5": SACMoEConfig().training(num_experts=5),
            "MOE10": SACMoEConfig().training(num_experts=10),
        }.items()
    }
    sac = count["SAC"]["actor"]
    ratio = {name: c["actor"] / sac for name, c in count.items()}
    print({name: (c["actor"], round(ratio[name], 2)) for name, c in count.items()})
    assert 0.8 < ratio["SMAC"] < 1.0 and 0.95 < ratio["TD3"] <= 1.0
    assert abs(ratio["MOE5"] - 1) < 0.01 and abs(ratio["MOE10"] - 1) < 0.01
    assert 2.0 <= ratio["Flow2"] < 2.1 and 4.0 <= ratio["Flow4"] < 4.2
    assert count["SAC"]["critic"] == count["TD3"]["critic"] == count["Flow2"]["critic"] == count["MOE5"]["critic"]


# --- bad settings --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "config,message",
    [
        (
            lambda: SACFlowConfig().training(flow_blocks=0),
            r"flow_blocks=0 must be an integer >= 1 \(the paper's Flow2 / Flow4",
        ),
        (lambda: SACFlowConfig().training(flow_hidden_dim=-3), r"flow_hidden_dim=-3 must be an integer >= 1 or None"),
        (
            lambda: SACMoEConfig().training(num_experts=1),
            r"num_experts=1 must be an integer >= 2 .*one expert is the SACBaseline",
        ),
        (lambda: SACMoEConfig().training(num_experts=2.5), r"num_experts=2.5 must be an integer >= 2"),
        (lambda: TD3Config().training(policy_delay=0), r"policy_delay=0 must be an integer >= 1 \(TD3: 2"),
        (lambda: TD3Config().training(target_noise=-0.2), r"target_noise=-0.2 must be a number >= 0 \(TD3: 0.2\)"),
        (lambda: TD3Config().training(exploration_noise="big"), r"exploration_noise='big' must be a number in \[0, 1"),
    ],
)
def test_bad_settings_raise_one_line_errors_naming_the_fix(config, message):
    with pytest.raises(ValueError, match=message) as info:
        config().environment("dmc/cartpole-balance").validate()
    assert "\n" not in str(info.value)


def test_tuned_examples_load_and_validate(monkeypatch):
    from smac_rllib.cli import yaml_loader

    names = ("TD3", "SACFlow", "SACMoE")
    if not set(names) <= set(yaml_loader.OUR_ALGORITHMS):  # until cli/yaml_loader.py lists them (docs/baselines.md)
        monkeypatch.setattr(yaml_loader, "OUR_ALGORITHMS", tuple(yaml_loader.OUR_ALGORITHMS) + names)
    runs = {}
    for name in ("td3_state", "sac_flow_state", "sac_moe_state", "paper_state_comparison"):
        for spec in yaml_loader.load_experiments(f"tuned_examples/{name}.yaml"):
            runs[spec.name] = (spec.run, spec.num_trials, {type(c).__name__ for c in spec.configs})
    assert runs["sac-flow-state-cheetah-run"] == ("SACFlow", 2, {"SACFlowConfig"})
    assert runs["sac-moe-state-cheetah-run"] == ("SACMoE", 2, {"SACMoEConfig"})
    assert runs["td3-state-cheetah-run"] == ("TD3", 1, {"TD3Config"})
    comparison = {k: v for k, v in runs.items() if k in ("smac", "sac", "td3", "flow2", "flow4", "moe5", "moe10")}
    assert [v[0] for v in comparison.values()] == [
        "SMAC",
        "SACBaseline",
        "TD3",
        "SACFlow",
        "SACFlow",
        "SACMoE",
        "SACMoE",
    ]
    assert {v[1] for v in comparison.values()} == {10}  # 2 tasks x 5 seeds each


def test_paper_pixel_comparison_runs_four_algorithms_on_one_evaluation_protocol():
    """SMAC, Latent-SAC, SLAC, Dreamer (the reference's DreamerV1): 5 seeds each, 1M frames, evaluated every 10k
    frames on 5 episodes."""
    from smac_rllib.cli import yaml_loader
    from smac_rllib.cli.results import action_repeat

    specs = {spec.name: spec for spec in yaml_loader.load_experiments("tuned_examples/paper_pixel_comparison.yaml")}
    assert {name: spec.run for name, spec in specs.items()} == {
        "smac": "SMAC",
        "latent-sac": "SMAC",
        "slac": "SLAC",
        "dreamer": "Dreamer",
    }
    for name, spec in specs.items():
        assert spec.num_trials == 5 and sorted(c.seed for c in spec.configs) == [0, 1, 2, 3, 4], name
        for config in spec.configs:
            repeat = action_repeat(config.to_dict())
            assert spec.stop["env_runners/num_env_steps_sampled_lifetime"] * repeat == 1_000_000, name
            assert config.evaluation_interval * config.min_sample_timesteps_per_iteration * repeat == 10_000, name
            assert config.evaluation_duration == 5 and config.get_evaluation_config_object().explore is False, name
            assert config.env_config["from_pixels"] and config.env_config["image_size"] == 64, name
    assert {c.num_particles for c in specs["smac"].configs} == {32}
    assert {c.num_particles for c in specs["latent-sac"].configs} == {0}


# --- integration: 2 iterations on dm_control, checkpoint round trip -----------------------------------------
@pytest.mark.parametrize(
    "name,config,runners",
    [  # 1 remote runner: the inference-only module and its weight sync
        ("TD3", lambda: TD3Config(), 1),
        ("Flow2", lambda: SACFlowConfig().training(flow_blocks=2), 0),
        ("MOE5", lambda: SACMoEConfig().training(num_experts=5), 1),
    ],
)
def test_trains_on_dm_control_and_checkpoints_keep_weights(ray_local, tmp_path, name, config, runners):
    algo = (
        config()
        .environment("dmc/cartpole-balance", env_config={"seed": 0})
        .env_runners(num_env_runners=runners, rollout_fragment_length=50, num_cpus_per_env_runner=0.5)
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
        assert result["num_updates_lifetime"] > 0
        learner = result["learners"][DEFAULT_MODULE_ID]
        keys = ("critic/loss", "actor/loss") + (() if name == "TD3" else ("alpha/value", "actor/entropy"))
        for key in keys:
            assert math.isfinite(learner[key]), key
        algo.save_to_path(str(tmp_path))  # quiesces the async learner: no update runs until the next train()
        weights = algo.learner_group.get_weights()[DEFAULT_MODULE_ID]
    finally:
        algo.stop()
    restored = (
        config().environment("dmc/cartpole-balance").env_runners(num_env_runners=0).training(hidden_dim=32).build_algo()
    )
    try:
        restored.restore_from_path(str(tmp_path))
        again = restored.learner_group.get_weights()[DEFAULT_MODULE_ID]
        assert weights.keys() == again.keys()
        for key in weights:
            np.testing.assert_array_equal(np.asarray(weights[key]), np.asarray(again[key]), err_msg=key)
        action = restored.get_module().forward_inference({"obs": torch.zeros(1, 5)})["actions"]
        assert action.shape == (1, 1) and float(action.detach().abs().max()) <= 1.0
    finally:
        restored.stop()
