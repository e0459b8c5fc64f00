"""The reference code's choices and their switches (docs/fidelity.md): each option does what it says.

Hand-computed TD targets for ``td_entropy`` and ``critic_particles`` on fixed tiny batches, the Dreamer actor
head, per-modality initial alpha, ``beta_scale``, the SAC baseline's MSE critic, fp16 with a grad scaler, and
the exact uniform warm-up with 1 and 3 real env runners.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core import ALL_MODULES, DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

from smac_rllib.core import estimators
from smac_rllib.objectives import losses
from smac_rllib.algorithms import SACBaselineConfig, SMACConfig
from smac_rllib.objectives import pixel_forward
from smac_rllib.objectives.losses import LOG_W_NEXT, Q_NEXT_TARGET, Q_PRED, VALID_NEXT, ObjectiveSettings
from smac_rllib.objectives.pixel_update import REWARD_NEXT
from smac_rllib.core.distributions import gaussian_log_prob, tanh_log_det_jacobian
from smac_rllib.models.latent_policy import TanhGaussianHead, own_first_log_w
from tests.test_smac_pixels import SPACES as PIXEL_SPACES
from tests.test_smac_pixels import fake_sequences, pixel_config

GAMMA, ALPHA = 0.9, 0.5


# --- td_entropy: hand-computed targets ------------------------------------------------------------------
def _learner(**training):
    return pixel_config(**training).build_learner(spaces=PIXEL_SPACES)


def test_td_target_conditional_vs_marginal_by_hand():
    # one transition, K+1 = 3 latents; reward 1, Qbar twins (2, 4) -> min 2
    log_w_next = torch.tensor([[-1.0], [-2.0], [-3.0]])
    fwd_out = {LOG_W_NEXT: log_w_next, Q_NEXT_TARGET: torch.tensor([[2.0], [4.0]])}
    reward, terminated = torch.tensor([1.0]), torch.tensor([False])
    for td_entropy, entropy in [
        ("conditional", 1.0),  # -log pi(a'|s'_0)
        ("marginal", -math.log((math.exp(-1) + math.exp(-2) + math.exp(-3)) / 3)),  # Eq. (6) at x'
    ]:
        config = pixel_config(num_particles=2, estimator="nested", td_entropy=td_entropy, gamma=GAMMA)
        settings = ObjectiveSettings.from_config(config)  # what the Learner passes
        target = losses.soft_td_target(fwd_out, reward, terminated, alpha=ALPHA, discount_B=GAMMA, settings=settings)
        torch.testing.assert_close(target, torch.tensor([1.0 + GAMMA * (2.0 + ALPHA * entropy)]))


def test_td_target_per_particle_by_hand():
    # critic_particles="all": (T2, R, M) targets, each particle with its own Qbar and own -log pi(a'_r | s'_r)
    fwd_out = {
        LOG_W_NEXT: torch.tensor([[[-1.0, 0.5], [-2.0, 0.0]]]),  # (1, R=2, M=2): conditional log-weights
        Q_NEXT_TARGET: torch.tensor([[[1.0, 2.0], [3.0, 4.0]], [[0.0, 5.0], [6.0, 1.0]]]),  # (T2, R, M)
    }
    reward, terminated = torch.tensor([0.5, -0.5]), torch.tensor([False, True])
    settings = ObjectiveSettings.from_config(pixel_config(td_entropy="conditional"))
    target = losses.soft_td_target(fwd_out, reward, terminated, alpha=ALPHA, discount_B=GAMMA, settings=settings)
    expected = torch.tensor(
        [
            [0.5 + GAMMA * (0.0 + ALPHA * 1.0), -0.5],  # particle 0: min(1, 0) = 0; -log w = 1; 2nd transition ends
            [0.5 + GAMMA * (3.0 + ALPHA * 2.0), -0.5],  # particle 1: min(3, 6) = 3; -log w = 2
        ]
    )
    torch.testing.assert_close(target, expected)
    q_pred = torch.zeros(2, 2, 2)
    torch.testing.assert_close(losses.critic_loss(q_pred, target), 2 * expected.pow(2).mean())  # mean over (R, M)


# --- critic_particles on the pixel module: a fixed tiny batch, deterministic actor -------------------------
def _fixed_forward(monkeypatch, **training):
    """forward_train with fixed latents (particle r = r + noise) and zero sampling noise: a' = tanh(mean)."""
    module = pixel_config(num_particles=2, **training).get_rl_module_spec(spaces=PIXEL_SPACES).build()
    module.make_target_networks()
    with torch.no_grad():  # a target critic different from the critic
        for p in module.target_qf.parameters():
            p.add_(0.1 * torch.randn_like(p))
    batch = {k: torch.from_numpy(v) for k, v in fake_sequences().items()}
    B, T = batch["is_first"].shape
    feat_dim = module.world_model.feat_dim
    latents = (
        torch.randn(3, B, T, feat_dim, generator=torch.Generator().manual_seed(0))
        + torch.arange(3.0)[:, None, None, None]
    )
    monkeypatch.setattr(pixel_forward, "belief_particles", lambda *args: latents)  # forward_train's own module
    monkeypatch.setattr(torch, "randn_like", torch.zeros_like)
    monkeypatch.setattr(torch, "randn", torch.zeros)  # UpdateNoise.draw: every pre-drawn normal is zero
    with torch.no_grad():
        out = module.forward_train(batch)
    return module, batch, latents, out


@pytest.mark.parametrize("critic_particles", ["all", "s0"])
def test_critic_particles_targets_by_hand(monkeypatch, critic_particles):
    module, batch, latents, out = _fixed_forward(
        monkeypatch, critic_particles=critic_particles, td_entropy="conditional"
    )
    R = 3 if critic_particles == "all" else 1
    valid = ~batch["is_first"][:, 1:].bool()
    with torch.no_grad():
        for r in range(R):
            q_pred = module.qf(latents[r], batch[Columns.ACTIONS].float())[..., :-1][:, valid]
            torch.testing.assert_close(
                out[Q_PRED][:, r][:, valid], q_pred
            )  # Q(s_r,t, a_t) for particle r (grid, masked)
            mean, log_std = module.actor.params(latents[r])
            next_action = torch.tanh(mean)  # zero noise: a'_r = tanh(mean of pi(.|s_r,t+1))
            q_next = module.target_qf(latents[r], next_action)[..., 1:][:, valid]
            log_pi = (gaussian_log_prob(mean, mean, log_std) - tanh_log_det_jacobian(mean))[:, 1:][valid]
            torch.testing.assert_close(out[Q_NEXT_TARGET][:, r][:, valid], q_next)
            torch.testing.assert_close(out[LOG_W_NEXT][0, r][valid], log_pi)
    assert out[Q_PRED].shape[1] == out[Q_NEXT_TARGET].shape[1] == R
    assert out[LOG_W_NEXT].shape[0] == 1  # conditional: one log-weight per particle
    torch.testing.assert_close(out[REWARD_NEXT], batch[Columns.REWARDS][:, 1:])  # the (B, T-1) grid ...
    assert torch.equal(out[VALID_NEXT], valid)  # ... and the mask the losses apply to it


def test_own_first_log_weights_put_each_particles_own_latent_first():
    g = torch.Generator().manual_seed(1)
    mean_K1_B_A, log_std_K1_B_A = torch.randn(4, 5, 2, generator=g), 0.3 * torch.randn(4, 5, 2, generator=g)
    action_R_B_A, log_w_K1_R_B = own_first_log_w(mean_K1_B_A, log_std_K1_B_A)
    u_R_B_A = torch.atanh(action_R_B_A.double()).float()
    for r in range(4):
        others = [j for j in range(4) if j != r]
        for row, j in enumerate([r] + others):
            expected = gaussian_log_prob(u_R_B_A[r], mean_K1_B_A[j], log_std_K1_B_A[j]) - tanh_log_det_jacobian(
                u_R_B_A[r]
            )
            torch.testing.assert_close(log_w_K1_R_B[row, r], expected, rtol=1e-3, atol=1e-3)


def test_marginal_td_entropy_with_all_particles_has_k_plus_1_log_weights(monkeypatch):
    _, batch, _, out = _fixed_forward(monkeypatch, critic_particles="all", td_entropy="marginal")
    B, T = batch["is_first"].shape
    assert out[LOG_W_NEXT].shape == (3, 3, B, T - 1)
    assert torch.isfinite(estimators.mlmc_entropy(out[LOG_W_NEXT])).all()


# --- actor head, alpha, beta --------------------------------------------------------------------------------
def test_pixel_actor_head_is_the_references_action_decoder():
    torch.manual_seed(0)
    head = TanhGaussianHead(230, 6, 300, 4, torch.nn.ELU, head="dreamer")  # paper preset: feat 230, 4 x 300 ELU
    feat = torch.randn(4096, 230)
    mean, log_std = head.params(feat)
    std = log_std.exp()
    # network.py:272 gives c = log(exp(init_std - 1)) = 4, so std = softplus(raw + 4) + 1e-4 = 4.02 at raw = 0
    assert abs(head.raw_std_shift - 4.0) < 1e-12
    assert abs(std.median().item() - (math.log1p(math.exp(4.0)) + 1e-4)) < 0.5
    assert mean.abs().max() <= 5.0  # 5 tanh(mu / 5)
    big = head.params(feat * 1e3)  # saturating inputs: the mean stays inside (-5, 5), std >= 1e-4
    assert big[0].abs().max() <= 5.0 + 1e-6 and big[1].exp().min() >= 1e-4 * (1 - 1e-5)
    sac = TanhGaussianHead(230, 6, 300, 4, torch.nn.ELU, head="sac")
    assert sac.params(feat)[1].exp().median() < 0.5  # pytorch_sac's head starts near exp(-1.5) = 0.22


def test_initial_alpha_per_modality():
    pixel = _learner().module[DEFAULT_MODULE_ID]
    assert pixel.log_alpha.item() == pytest.approx(0.0)  # alpha = 1.0 (reference init_alpha)
    state_config = (
        SMACConfig()
        .environment(observation_space=gym.spaces.Box(-1, 1, (5,)), action_space=gym.spaces.Box(-1, 1, (2,)))
        .training(num_particles=4, latent_dim=3, hidden_dim=16, critic_hidden_dim=16)
    )
    state = state_config.get_rl_module_spec().build()
    assert state.log_alpha.item() == pytest.approx(math.log(0.1))  # pytorch_sac init_temperature
    assert pixel_config(initial_alpha=0.3).resolved_initial_alpha == 0.3


def test_beta_scale_alpha_vs_none_by_hand():
    q, h, h_cond = torch.tensor([1.0]), torch.tensor([2.0]), torch.tensor([3.0])
    scaled = losses.actor_loss(q, h, alpha=0.5, beta=0.2, conditional_entropy_B=h_cond, beta_scale="alpha")
    plain = losses.actor_loss(q, h, alpha=0.5, beta=0.2, conditional_entropy_B=h_cond, beta_scale="none")
    torch.testing.assert_close(scaled, torch.tensor(-1.0 - 0.5 * 2.0 + 0.5 * 0.2 * 3.0))
    torch.testing.assert_close(plain, torch.tensor(-1.0 - 0.5 * 2.0 + 0.2 * 3.0))
    with pytest.raises(ValueError, match="beta_scale='x' is unknown"):
        losses.actor_loss(q, h, alpha=0.5, beta=0.2, conditional_entropy_B=h_cond, beta_scale="x")


@pytest.mark.parametrize(
    "training, message",
    [
        (dict(td_entropy="joint"), "td_entropy='joint' is unknown"),
        (dict(critic_particles="some"), "critic_particles='some' is unknown; use one of 'all', 's0'"),
        (dict(beta_scale="beta"), "beta_scale='beta' is unknown"),
        (dict(mlmc_average_level0="yes"), "mlmc_average_level0='yes' must be true or false (true: the reference"),
        (dict(pixel_actor_head="flow"), "pixel_actor_head='flow' is unknown"),
        (dict(initial_alpha=0.0), "initial_alpha=0.0 must be a number > 0"),
    ],
)
def test_new_options_validate_with_a_message_that_names_the_fix(training, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        pixel_config(**training).validate()


# --- the SAC baseline's critic loss -----------------------------------------------------------------------
def test_sac_baseline_critic_loss_is_mse_by_hand():
    obs, act = gym.spaces.Box(-np.inf, np.inf, (5,), np.float32), gym.spaces.Box(-1, 1, (2,), np.float32)
    spaces = {"__env__": (obs, act), DEFAULT_MODULE_ID: (obs, act)}
    g = torch.Generator().manual_seed(0)
    batch = {
        Columns.OBS: torch.randn(8, 5, generator=g),
        Columns.NEXT_OBS: torch.randn(8, 5, generator=g),
        Columns.ACTIONS: torch.rand(8, 2, generator=g) * 2 - 1,
        Columns.REWARDS: torch.rand(8, generator=g),
        Columns.TERMINATEDS: torch.tensor([False] * 7 + [True]),
        "n_step": torch.ones(8),
        "weights": torch.ones(8),
    }
    for kind in ("mse", "huber"):
        config = (
            SACBaselineConfig()
            .environment(observation_space=obs, action_space=act)
            .training(hidden_dim=16, critic_loss=kind)
        )
        learner = config.build_learner(spaces=spaces)
        module = learner.module[DEFAULT_MODULE_ID]
        fwd_out = module.forward_train(batch)
        learner.compute_loss_for_module(module_id=DEFAULT_MODULE_ID, config=config, batch=batch, fwd_out=fwd_out)
        alpha = math.exp(math.log(0.1))
        not_done = 1.0 - batch[Columns.TERMINATEDS].float()
        soft_next = fwd_out["q_target_next"] - alpha * fwd_out["logp_next_resampled"]
        target = (batch[Columns.REWARDS] + 0.99 * not_done * soft_next).detach()
        fn = torch.nn.functional.mse_loss if kind == "mse" else torch.nn.functional.huber_loss
        for key, q in (("qf_loss", fwd_out["qf_preds"]), ("qf_twin_loss", fwd_out["qf_twin_preds"])):
            torch.testing.assert_close(
                learner._temp_losses[(DEFAULT_MODULE_ID, key)], fn(q, target), msg=f"{kind} {key}"
            )


# --- fp16 with a grad scaler (CPU autocast here; the GPU path is the same code) ----------------------------
def test_fp16_autocast_trains_through_a_grad_scaler():
    """``autocast: fp16``: the one update keeps a GradScaler (objectives/update_step.py), its scale reported."""
    learner = _learner(autocast="fp16")
    module = learner.module[DEFAULT_MODULE_ID]
    before = {k: v.detach().clone() for k, v in module.state_dict().items()}
    batch = MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(fake_sequences())}, env_steps=18)
    scales = []
    for _ in range(30):  # the first steps may overflow at the initial scale 2^16: skipped, and the scale halves
        results = learner.update(batch=batch, timesteps={"num_env_steps_sampled_lifetime": 10_000})
        scales.append(results[DEFAULT_MODULE_ID]["gradients/fp16_loss_scale"].peek())
        after = module.state_dict()
        if any(not torch.equal(before[k], after[k]) for k in before if k.startswith("world_model.rssm")):
            break
    else:
        pytest.fail(f"no fp16 step was taken in 30 updates; loss scales {scales}")
    assert all(torch.isfinite(v).all() for v in after.values() if v.is_floating_point())
    assert 1.0 < scales[-1] <= 2.0**16
    assert learner._updates[DEFAULT_MODULE_ID].scaler is not None


# --- exact warm-up with real env runners ---------------------------------------------------------------------
@pytest.mark.parametrize("algo, num_env_runners", [("SMAC", 3), ("SACBaseline", 1)])  # a cut round; one runner
def test_uniform_warm_up_is_exact(ray_local, algo, num_env_runners):
    warm_up, fragment = 130, 50  # 3 runners x 50 > 130: the round is cut to exactly 130 (50 + 50 + 30)
    if algo == "SMAC":
        config = SMACConfig().training(num_particles=2, latent_dim=3, hidden_dim=16, critic_hidden_dim=16)
    else:
        config = SACBaselineConfig().training(hidden_dim=16)
    algo_ = (
        config.environment("dmc/cartpole-balance", env_config={"seed": 0})
        .env_runners(num_env_runners=num_env_runners, rollout_fragment_length=fragment, num_cpus_per_env_runner=0.5)
        .training(
            train_batch_size_per_learner=16, num_steps_sampled_before_learning_starts=warm_up, updates_per_env_step=0.1
        )
        .reporting(min_sample_timesteps_per_iteration=1)  # one training_step per iteration
        .debugging(seed=0)
        .build_algo()
    )
    try:
        steps_per_round = min(num_env_runners * fragment, warm_up)
        sampled = 0
        while sampled < warm_up:
            result = algo_.train()
            sampled += steps_per_round if warm_up - sampled >= steps_per_round else warm_up - sampled
            assert len(algo_.local_replay_buffer) == sampled  # never more than the warm-up
            assert result.get("num_updates_lifetime", 0) == 0  # no update before `warm_up` steps are stored
        assert len(algo_.local_replay_buffer) == warm_up
        result = algo_.train()  # the policy acts now (async, the default: as soon as one fragment arrived)
        new_steps = len(algo_.local_replay_buffer) - warm_up
        assert new_steps > 0 and new_steps % fragment == 0
        updates = len(algo_.update_stamps())  # waits for the learner thread to run every granted update
        assert updates == int(new_steps * 0.1)
        actions = algo_.local_replay_buffer._arrays[Columns.ACTIONS]
        warm_actions = actions[:warm_up]
        # U[-1, 1]: 130 draws, std of the mean 0.051 and of the variance ~0.026: 5 sigma (0.15 failed once at 3.2 sigma)
        assert abs(warm_actions.var() - 1 / 3) < 0.13 and abs(warm_actions.mean()) < 0.25
        if algo == "SMAC":  # the untrained latent policy acts with std ~ exp(-1.5): far from uniform
            assert actions[warm_up : warm_up + new_steps].var() < 0.15
    finally:
        algo_.stop()


def test_fp16_skips_a_non_finite_update_and_goes_on():
    learner = _learner(autocast="fp16")
    module = learner.module[DEFAULT_MODULE_ID]
    good = fake_sequences()
    bad = dict(good, rewards=np.full_like(good["rewards"], np.nan))  # a non-finite loss
    skipped = 0
    for data in (bad, good, bad, good):  # the skipped update must not leave the scaler half-stepped
        before = {k: v.detach().clone() for k, v in module.state_dict().items()}
        results = learner.update(
            batch=MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(data)}, env_steps=18),
            timesteps={"num_env_steps_sampled_lifetime": 10_000},
        )
        after = module.state_dict()
        skipped += results[ALL_MODULES]["nonfinite_updates_skipped"].peek()  # per-update count
        if data is bad:
            # the target critics still move toward the (unchanged) critics: RLlib Polyak-averages after every update
            changed = [k for k in before if not k.startswith("target_qf") and not torch.equal(before[k], after[k])]
            assert not changed, changed
    assert all(torch.isfinite(v).all() for v in after.values() if v.is_floating_point())
    assert skipped == 2
