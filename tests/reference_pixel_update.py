"""Frozen reference: the pixel update as it was at 58c9715, before the sync-free refactor (docs/design.md §10), kept to
hold the refactored ``smac_rllib.objectives.pixel_update`` to it (tests/test_pixel_update.py) and to time the two side
by side (benchmarks/pixel_update_speed.py). Do not "fix" or modernise this file: it is the yardstick.

The only change from 58c9715: every Gaussian draw reads the pre-drawn noise of
``smac_rllib.objectives.pixel_update.UpdateNoise`` (the posterior, the particles, the actor, the TD target's next
actions) instead of calling ``torch.randn_like``, so both versions see identical inputs. The per-step prior sample of
the old observe loop, which nothing used, draws nothing here (it never influenced a number). Everything else -- the
prior head inside the loop, the concatenated GRU input, the five boolean-mask gathers, the host-synchronising non-finite
check of the RLlib path (here: none, as in the old ``PixelUpdate``), torch's ``clip_grad_norm_`` per optimizer -- is as
it was.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from smac_rllib.core import estimators
from smac_rllib.objectives import losses
from smac_rllib.objectives.losses import ACTION_LOG_STD, LOG_W, LOG_W_NEXT, Q_NEXT_TARGET, Q_PI, Q_PRED
from smac_rllib.models.critic import frozen
from smac_rllib.core.distributions import gaussian_log_prob, tanh_log_det_jacobian
from smac_rllib.models.latent_policy import PolicySample
from smac_rllib.objectives.pixel_update import (
    PARTICLE_SPREAD,
    REWARD_NEXT,
    TERMINATED_NEXT,
    WM_LOSS,
    WM_METRICS,
    PixelUpdate,
    autocast,
    resolve_autocast,
)
from smac_rllib.core import elbo
from smac_rllib.models.conv import preprocess_image


# ----- the RSSM loop of 58c9715 (prior head and the GRU input's concatenation inside the loop) -------------------
def _gaussian(rssm, x):
    mean, raw_std = x.chunk(2, dim=-1)
    return mean, F.softplus(raw_std) + rssm.min_std


def _obs_step(rssm, prev_state, prev_action_B_A, embed_proj_B_Hd, is_first_B, eps_B_S):
    if is_first_B is not None:
        keep_B_1 = 1.0 - is_first_B.to(prev_action_B_A.dtype).unsqueeze(-1)
        prev_state = {k: v * keep_B_1 for k, v in prev_state.items()}
        prev_action_B_A = prev_action_B_A * keep_B_1
    x_B_Hd = rssm.img_in(torch.cat([prev_state["stoch"], prev_action_B_A], dim=-1))
    deter_B_D = rssm.gru(x_B_Hd, prev_state["deter"])
    prior_mean, prior_std = _gaussian(rssm, rssm.prior_head(deter_B_D))
    prior = dict(mean=prior_mean, std=prior_std, stoch=prior_mean, deter=deter_B_D)  # the unused sample: not drawn
    x_B_Hd = rssm.post_deter_in(deter_B_D) + embed_proj_B_Hd
    mean_B_S, std_B_S = _gaussian(rssm, rssm.post_head(x_B_Hd))
    post = dict(mean=mean_B_S, std=std_B_S, stoch=mean_B_S + std_B_S * eps_B_S.to(std_B_S.dtype), deter=deter_B_D)
    return post, prior


def _observe_projected(rssm, embed_proj_B_T_Hd, action_B_T_A, is_first_B_T, eps_B_T_S):
    B, T = action_B_T_A.shape[:2]
    state = rssm.initial_state(B, action_B_T_A.device)
    posts, priors = [], []
    for t in range(T):
        state, prior = _obs_step(
            rssm, state, action_B_T_A[:, t], embed_proj_B_T_Hd[:, t], is_first_B_T[:, t], eps_B_T_S[:, t]
        )
        posts.append(state)
        priors.append(prior)
    stack = lambda states: {k: torch.stack([s[k] for s in states], dim=1) for k in ("mean", "std", "stoch", "deter")}  # noqa: E731
    return stack(posts), stack(priors)


def _world_model_loss(wm, obs, prev_action_B_T_A, reward_B_T, is_first_B_T, eps_B_T_S):
    device = wm.decoder.fc.weight.device
    image = preprocess_image(obs, device)
    embed_B_T_E = wm.encoder(image)
    post, prior = _observe_projected(
        wm.rssm, wm.rssm.post_embed_in(embed_B_T_E), prev_action_B_T_A, is_first_B_T, eps_B_T_S
    )
    feat_B_T_F = wm.rssm.get_feat(post)
    image_ll = elbo.gaussian_image_log_lik(wm.decoder(feat_B_T_F), image)
    reward_ll = elbo.reward_log_lik(wm.predict_reward(feat_B_T_F), reward_B_T)
    kl = elbo.kl_gaussians(post["mean"], post["std"], prior["mean"], prior["std"])
    loss = elbo.world_model_elbo_loss(
        image_ll, reward_ll, kl, free_nats=wm.config.free_nats, kl_scale=wm.config.kl_scale
    )
    with torch.no_grad():
        metrics = {
            "world_model/loss": loss.detach(),
            "world_model/image_nll": -image_ll.mean(),
            "world_model/reward_nll": -reward_ll.mean(),
            "world_model/kl": kl.mean(),
            "world_model/prior_entropy": elbo.gaussian_entropy(prior["std"]).mean(),
            "world_model/post_entropy": elbo.gaussian_entropy(post["std"]).mean(),
        }
    return loss, metrics, post, embed_B_T_E, feat_B_T_F


# ----- forward_train of 58c9715 (boolean-mask gathers) ----------------------------------------------------------
def forward_train(batch, *, world_model, actor, qf, target_qf, settings, device, noise):
    action_B_T_A = batch["actions"].to(device=device, dtype=torch.float32)
    is_first_B_T = batch["is_first"].to(device)
    prev_action_B_T_A = torch.cat([torch.zeros_like(action_B_T_A[:, :1]), action_B_T_A[:, :-1]], dim=1)
    with autocast(device, resolve_autocast(settings.autocast, device)):
        wm_loss, wm_metrics, post, embed, feat = _world_model_loss(
            world_model,
            batch["obs"],
            prev_action_B_T_A,
            batch["rewards"].to(device, torch.float32),
            is_first_B_T,
            noise.posterior_B_T_S,
        )
        latent_K1_B_T_F = _belief_particles(
            world_model, post, embed, feat, prev_action_B_T_A, is_first_B_T, settings, noise
        )
    out = {WM_LOSS: wm_loss.float(), WM_METRICS: wm_metrics}
    K1, B, T = latent_K1_B_T_F.shape[0], *action_B_T_A.shape[:2]
    latent_K1_B_T_F = latent_K1_B_T_F.float()
    latent_K1_N_F = latent_K1_B_T_F.reshape(K1, B * T, -1)
    out[PARTICLE_SPREAD] = latent_K1_N_F.std(dim=0).mean() if K1 > 1 else torch.zeros((), device=device)

    mean_K1_N_A, log_std_K1_N_A = actor.params(latent_K1_N_F)
    u_N_A = mean_K1_N_A[0] + log_std_K1_N_A[0].exp() * noise.actor_N_A
    log_w_K1_N = gaussian_log_prob(u_N_A.unsqueeze(0), mean_K1_N_A, log_std_K1_N_A) - tanh_log_det_jacobian(u_N_A)
    sample = PolicySample(torch.tanh(u_N_A), log_w_K1_N, None, log_std_K1_N_A[0])
    out[LOG_W], out[ACTION_LOG_STD] = sample.log_w_K1_B, sample.action_log_std_B_A
    with frozen(qf):
        action_K1_N_A = sample.action_B_A.unsqueeze(0).expand(K1, -1, -1)
        q_K1_N = qf(latent_K1_N_F, action_K1_N_A).min(dim=0).values
        out[Q_PI] = estimators.marginal_q(q_K1_N)

    R = K1 if settings.critic_particles == "all" else 1
    valid_B_Tm1 = ~is_first_B_T[:, 1:].bool()
    q_pred_T2_R_B_T = qf(latent_K1_B_T_F[:R], action_B_T_A.expand(R, -1, -1, -1))
    out[Q_PRED] = q_pred_T2_R_B_T[..., :-1][:, :, valid_B_Tm1]
    with torch.no_grad():
        mean_R_B_T_A = mean_K1_N_A[:R].detach().reshape(R, B, T, -1)
        log_std_R_B_T_A = log_std_K1_N_A[:R].detach().reshape(R, B, T, -1)
        if R == 1:
            next_action_R_B_T_A = sample.action_B_A.detach().reshape(1, B, T, -1)
            log_w_K1_R_B_T = sample.log_w_K1_B.detach().reshape(K1, 1, B, T)
        elif settings.td_entropy == "conditional":
            u = mean_R_B_T_A + log_std_R_B_T_A.exp() * noise.next_action_R_B_T_A
            log_w = gaussian_log_prob(u, mean_R_B_T_A, log_std_R_B_T_A) - tanh_log_det_jacobian(u)
            next_action_R_B_T_A, log_w_K1_R_B_T = torch.tanh(u), log_w.unsqueeze(0)
        else:
            raise NotImplementedError("the frozen reference covers the reference's settings (conditional TD entropy)")
        if settings.td_entropy == "conditional":
            log_w_K1_R_B_T = log_w_K1_R_B_T[:1]
        q_next_T2_R_B_T = target_qf(latent_K1_B_T_F[:R], next_action_R_B_T_A)
        out[Q_NEXT_TARGET] = q_next_T2_R_B_T[..., 1:][:, :, valid_B_Tm1]
        out[LOG_W_NEXT] = log_w_K1_R_B_T[..., 1:][:, :, valid_B_Tm1]
        out[REWARD_NEXT] = batch["rewards"].to(device, torch.float32)[:, 1:][valid_B_Tm1]
        out[TERMINATED_NEXT] = batch["is_terminated"].to(device)[:, 1:][valid_B_Tm1]
    return out


def _belief_particles(world_model, post, embed, feat, prev_action_B_T_A, is_first_B_T, settings, noise):
    feat0 = feat.detach().unsqueeze(0)
    K = settings.num_particles
    if K == 0:
        return feat0
    rssm = world_model.rssm
    with torch.no_grad():
        if settings.particle_mode == "history":
            B, T = prev_action_B_T_A.shape[:2]
            repeat = lambda x: x.repeat(K, *([1] * (x.dim() - 1)))  # noqa: E731
            post_K, _ = _observe_projected(
                rssm,
                repeat(rssm.post_embed_in(embed.detach())),
                repeat(prev_action_B_T_A),
                repeat(is_first_B_T),
                noise.particles,
            )
            post_K = {k: v.reshape(K, B, T, *v.shape[2:]) for k, v in post_K.items()}
            feat_K = rssm.get_feat(post_K)
        else:
            stoch = post["mean"].detach() + post["std"].detach() * noise.particles.to(post["std"].dtype)
            feat_K = rssm.get_feat({"stoch": stoch, "deter": post["deter"].detach()})
    return torch.cat([feat0, feat_K.to(feat0.dtype)], dim=0)


def as_58c9715_layout(update: PixelUpdate) -> PixelUpdate:
    """The conv weights in the layout 58c9715 kept them in (contiguous NCHW; today's are channels-last): same values."""
    update.world_model.encoder.to(memory_format=torch.contiguous_format)
    update.world_model.decoder.to(memory_format=torch.contiguous_format)
    return update


# ----- PixelUpdate.step of 58c9715 ------------------------------------------------------------------------------
def reference_step(update: PixelUpdate, batch: dict, noise) -> dict:
    """One update of ``update``'s nets and optimizers by the 58c9715 code (fp32/bf16; no fp16 scaler)."""
    device = update.log_alpha.device
    fwd_out = forward_train(
        batch,
        world_model=update.world_model,
        actor=update.actor,
        qf=update.qf,
        target_qf=update.target_qf,
        settings=update.settings,
        device=device,
        noise=noise,
    )
    out = losses.soft_actor_critic_losses(
        fwd_out,
        fwd_out[REWARD_NEXT],
        fwd_out[TERMINATED_NEXT],
        log_alpha=update.log_alpha,
        target_entropy=update.target_entropy,
        discount_B=update.optim.gamma,
        settings=update.objective,
    )
    total = fwd_out[WM_LOSS] + out.critic + out.actor + out.alpha
    for optimizer in update.optimizers.values():
        optimizer.zero_grad(set_to_none=True)
    total.backward()
    norms = {}
    for name, optimizer in update.optimizers.items():
        if name != "alpha" and update.optim.grad_clip:
            params = [p for group in optimizer.param_groups for p in group["params"]]
            norms[f"gradients/{name}_global_norm"] = torch.nn.utils.clip_grad_norm_(params, update.optim.grad_clip)
    for optimizer in update.optimizers.values():
        optimizer.step()
    with torch.no_grad():
        for target, source in zip(update.target_qf.parameters(), update.qf.parameters(), strict=True):
            target.lerp_(source, update.optim.tau)
    metrics = losses.loss_metrics(
        fwd_out,
        out,
        target_entropy=update.target_entropy,
        num_particles=update.settings.num_particles,
        settings=update.objective,
    )
    return metrics | fwd_out[WM_METRICS] | norms | {"estimator/particle_feat_std": fwd_out[PARTICLE_SPREAD]}
