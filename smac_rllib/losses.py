"""SMAC's actor-critic losses as pure functions (torch and math only; the Learner calls these).

Legend: B = batch, T2 = the twin critics (2). ``entropy_*`` are estimates of the MARGINAL entropy
H[pi(.|h)] from ``smac_rllib.estimators`` (for SAC: -log pi(a|x)).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def td_target(
    reward_B: torch.Tensor,
    terminated_B: torch.Tensor,
    q_next_target_T2_B: torch.Tensor,
    entropy_next_B: torch.Tensor,
    *,
    alpha: torch.Tensor | float,
    discount_B: torch.Tensor | float,
) -> torch.Tensor:
    """Soft TD target, Eq. (10): ``r + gamma^n (1 - d) (min_i Qbar_i(x', a') + alpha * H~(pi(.|x')))``.

    a' ~ pi(.|x') and H~ is the entropy estimate at x' (same estimator as the actor). No gradient flows.
    ``discount_B`` is gamma ** n_step (scalar or per sample).
    """
    soft_value_B = q_next_target_T2_B.min(dim=0).values + alpha * entropy_next_B  # Eq. (10)
    not_done_B = 1.0 - terminated_B.to(reward_B.dtype)
    return (reward_B + discount_B * not_done_B * soft_value_B).detach()


def critic_loss(q_pred_T2_B: torch.Tensor, target_B: torch.Tensor, *, kind: str = "mse") -> torch.Tensor:
    """Sum over the twin critics of the mean regression loss to the (detached) TD target.

    ``B`` may be several dims (pixels with ``critic_particles="all"``: (K+1, M) particle x transition pairs,
    averaged like the reference's ``F.mse_loss`` over (K+1, B, T-1), ``visual_control/smac.py:158``).
    "mse" is the paper's / pytorch_sac's; "huber" (delta 1) is RLlib SAC's default, offered as an option.
    """
    target_T2_B = target_B.detach().unsqueeze(0).expand_as(q_pred_T2_B)
    if kind == "mse":
        per_critic = F.mse_loss(q_pred_T2_B, target_T2_B, reduction="none").flatten(1).mean(dim=1)
    elif kind == "huber":
        per_critic = F.huber_loss(q_pred_T2_B, target_T2_B, reduction="none", delta=1.0).flatten(1).mean(dim=1)
    else:
        raise ValueError(f"critic loss kind={kind!r} is unknown; use 'mse' or 'huber'")
    return per_critic.sum()


def actor_loss(
    q_pi_B: torch.Tensor,
    entropy_B: torch.Tensor,
    *,
    alpha: torch.Tensor | float,
    beta: float = 0.0,
    conditional_entropy_B: torch.Tensor | None = None,
    beta_scale: str = "alpha",
) -> torch.Tensor:
    """Actor loss, Eq. (11): ``E[-Q(x, a) - alpha * H~(x)]`` (+ App. B.3: ``+ c * beta * E_q[H(pi(.|s))]``).

    ``q_pi_B`` must carry gradients to the policy only (critic parameters frozen by the caller) and ``alpha``
    must be detached. beta > 0 subtracts the conditional entropy from the objective, i.e. rewards the part of
    the marginal entropy that comes from the latent (the mutual information). ``beta_scale="alpha"``: c = alpha,
    as the reference code (``visual_control/smac.py:140, 245``: ``alpha * (log_pi + pazent * -log_prob0)``);
    ``"none"``: c = 1, the paper's objective (App. B.3). Both apply it to the actor only (docs/fidelity.md).
    """
    loss_B = -q_pi_B - alpha * entropy_B  # Eq. (11)
    if beta:
        if conditional_entropy_B is None:
            raise ValueError("beta > 0 needs conditional_entropy_B (App. B.3)")
        if beta_scale not in ("alpha", "none"):
            raise ValueError(f"beta_scale={beta_scale!r} is unknown; use 'alpha' (reference code) or 'none' (paper)")
        scale = alpha if beta_scale == "alpha" else 1.0
        loss_B = loss_B + scale * beta * conditional_entropy_B  # App. B.3
    return loss_B.mean()


def alpha_loss(log_alpha: torch.Tensor, entropy_B: torch.Tensor, *, target_entropy: float) -> torch.Tensor:
    """Temperature loss (SAC auto-tuning): alpha rises when the entropy estimate is below the target.

    ``-log_alpha * (target - H~)`` with H~ detached; the gradient only reaches log_alpha.
    """
    return (log_alpha * (entropy_B.detach() - target_entropy)).mean()

