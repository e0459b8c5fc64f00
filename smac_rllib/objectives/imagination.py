"""Dreamer (v1, Hafner et al. 2020) as the SMAC reference code ships it -- the paper's Dreamer baseline: actor and value
trained in imagination with lambda-returns on the same RSSM world model as SMAC (reference
``visual_control/dreamer.py``, ``dreamer=0``). Pure torch, no ray; the RLlib glue is
``smac_rllib/algorithms/baselines/dreamer/``.

Legend: B = batch (sequences), T = time, N = B*T imagination starts, H = horizon, H1 = H + 1 imagined states (the start
first), F = feature dim (stoch + deter), A = action dim.

One update (reference ``dreamer.py:75-160``): the world-model ELBO (Eq. 13, the same as SMAC's); then from every
posterior state of the batch (detached) the actor imagines H steps through the prior (``rssm.img_step``), acting on
the detached features, with the world model and the value frozen: gradients reach the actor through the imagined
dynamics only. Rewards and values of the imagined states 1..H give lambda-returns; the actor maximizes their
discount-weighted mean, the value regresses the imagined states 0..H-1 onto them (unit-variance Gaussian).
"""

from __future__ import annotations

import contextlib

import torch

from smac_rllib.core import elbo
from smac_rllib.models.critic import frozen
from smac_rllib.core.distributions import gaussian_log_prob, tanh_log_det_jacobian
from smac_rllib.objectives.pixel_update import WM_LOSS, WM_METRICS, autocast, resolve_autocast

ACTOR_LOSS = "dreamer_actor_loss"
VALUE_LOSS = "dreamer_value_loss"
DREAMER_METRICS = "dreamer_metrics"


def lambda_returns(
    reward_H_N: torch.Tensor, value_H_N: torch.Tensor, pcont_H_N: torch.Tensor, lam: float
) -> torch.Tensor:
    """(H, N) lambda-returns of imagined states 0..H-1 (reference ``dreamer.py:127-132``).

    ``reward_H_N[t]`` and ``value_H_N[t]`` belong to the imagined state t+1 (the reward on entering it, its value),
    ``pcont_H_N[t]`` the discount of that step. ``R_t = r_t + pcont_t ((1 - lam) v_t + lam R_{t+1})``, bootstrapped
    with ``R_H = v_{H-1}``, the value of the last imagined state (so ``R_{H-1} = r_{H-1} + pcont v_{H-1}``).
    """
    returns, last = [], value_H_N[-1]
    for t in reversed(range(reward_H_N.shape[0])):
        last = reward_H_N[t] + pcont_H_N[t] * ((1.0 - lam) * value_H_N[t] + lam * last)
        returns.append(last)
    return torch.stack(returns[::-1])


def discount_weights(pcont_H_N: torch.Tensor) -> torch.Tensor:
    """(H, N) weights of the imagined states 0..H-1: 1, pcont_0, pcont_0 pcont_1, ... (reference ``dreamer.py:124``)."""
    return torch.cat([torch.ones_like(pcont_H_N[:1]), torch.cumprod(pcont_H_N, dim=0)[:-1]], dim=0)


def imagine_ahead(
    rssm, actor, start: dict, horizon: int, dynamics_context=contextlib.nullcontext
) -> tuple[torch.Tensor, torch.Tensor]:
    """(feat_H1_N_F, log_pi_H_N): H prior steps from the (N, ...) start states under a ~ pi(.|s) (reference
    ``dreamer.py:312-348``). The actor sees detached features (its gradient arrives through the dynamics, not through
    its own input); the start states are detached; the states themselves are not, so the imagined chain carries the
    gradient of every later return back to each action. ``dynamics_context()`` wraps each prior step only (the
    reference runs ``img_step`` under autocast and the actor in fp32, ``dreamer.py:333-338``)."""
    state = {k: start[k].detach() for k in ("stoch", "deter")}
    feats, log_pis = [rssm.get_feat(state)], []
    for _ in range(horizon):
        mean_N_A, log_std_N_A = actor.params(rssm.get_feat(state).detach().float())
        u_N_A = mean_N_A + log_std_N_A.exp() * torch.randn_like(mean_N_A)  # rsample
        log_pis.append(gaussian_log_prob(u_N_A, mean_N_A, log_std_N_A) - tanh_log_det_jacobian(u_N_A))
        with dynamics_context():
            state = rssm.img_step(state, torch.tanh(u_N_A))
        feats.append(rssm.get_feat(state))
    return torch.stack([f.float() for f in feats]), torch.stack(log_pis)


def actor_value_losses(reward_H_N, value_H_N, value_pred_H_N, *, discount: float, lam: float):
    """(actor loss, value loss, lambda-returns, weights) from the imagined rewards and values (reference
    ``dreamer.py:116-133, 140-147``): the actor maximizes the weighted mean return, the value is trained by the negative
    unit-variance Gaussian log-likelihood of the detached returns, weighted by the same discounts."""
    pcont_H_N = torch.full_like(reward_H_N, discount)  # no continuation head (pcont off in the reference's runs)
    weights_H_N = discount_weights(pcont_H_N).detach()
    returns_H_N = lambda_returns(reward_H_N, value_H_N, pcont_H_N, lam)
    actor_loss = -(weights_H_N * returns_H_N).mean()
    value_nll_H_N = -elbo.reward_log_lik(value_pred_H_N, returns_H_N.detach())  # -log N(R; v, 1)
    return actor_loss, (weights_H_N * value_nll_H_N).mean(), returns_H_N, weights_H_N


def dreamer_forward_train(
    batch: dict,
    *,
    world_model,
    actor,
    value,
    horizon: int,
    discount: float,
    lam: float,
    autocast_setting,
    device: torch.device,
) -> dict:
    """World-model loss (Eq. 13), imagination, actor and value losses of one Dreamer update, with metrics."""
    action_B_T_A = batch["actions"].to(device=device, dtype=torch.float32)
    is_first_B_T = batch["is_first"].to(device)
    prev_action_B_T_A = torch.cat([torch.zeros_like(action_B_T_A[:, :1]), action_B_T_A[:, :-1]], dim=1)
    dtype = resolve_autocast(autocast_setting, device)
    with autocast(device, dtype):  # the world model and the imagined dynamics (reference dreamer.py:77, 337)
        wm_loss, wm_metrics, wm = world_model.loss(
            batch["obs"], prev_action_B_T_A, batch["rewards"].to(device, torch.float32), is_first_B_T
        )
    start_N = {k: wm.post[k].reshape(-1, wm.post[k].shape[-1]) for k in ("stoch", "deter")}
    with frozen(world_model), frozen(value):  # the actor loss trains the actor only (reference dreamer.py:102)
        feat_H1_N_F, log_pi_H_N = imagine_ahead(
            world_model.rssm, actor, start_N, horizon, dynamics_context=lambda: autocast(device, dtype)
        )
        reward_H_N = world_model.predict_reward(feat_H1_N_F[1:])
        value_H_N = value(feat_H1_N_F[1:]).squeeze(-1)
    value_pred_H_N = value(feat_H1_N_F[:-1].detach()).squeeze(-1)  # trains the value (reference dreamer.py:143)
    actor_loss, value_loss, returns_H_N, _ = actor_value_losses(
        reward_H_N, value_H_N, value_pred_H_N, discount=discount, lam=lam
    )
    with torch.no_grad():
        metrics = {
            "dreamer/actor_loss": actor_loss.detach(),
            "dreamer/value_loss": value_loss.detach(),
            "dreamer/return_mean": returns_H_N.mean(),
            "dreamer/value_mean": value_pred_H_N.mean(),
            "dreamer/imagined_reward_mean": reward_H_N.mean(),
            "dreamer/log_pi": log_pi_H_N.mean(),
        }
    return {
        WM_LOSS: wm_loss.float(),
        WM_METRICS: wm_metrics,
        ACTOR_LOSS: actor_loss,
        VALUE_LOSS: value_loss,
        DREAMER_METRICS: metrics,
    }
