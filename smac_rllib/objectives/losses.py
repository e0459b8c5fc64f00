"""SMAC's actor-critic losses as pure functions (torch, math and ``smac_rllib.core.estimators``; no ray).

Legend: B = batch (for pixels with ``critic_particles="all"``: (R, M) = particles x transitions), T2 = the twin
critics (2), K1 = K + 1 latents. ``entropy_*`` are estimates of the MARGINAL entropy H[pi(.|h)] from
``smac_rllib.core.estimators`` (for SAC: -log pi(a|x)).

``soft_actor_critic_losses`` turns the outputs of a training forward pass (the keys below, produced by the
state RLModule and by ``smac_rllib.objectives.pixel_forward.forward_train``) into the critic, actor and temperature
losses; the one update of each modality calls it (``StateUpdate.step``, ``PixelUpdate.step``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F

from smac_rllib.core import estimators
from smac_rllib.core.distributions import gaussian_entropy

# Keys of the training forward pass.
Q_PRED = "q_pred_T2_B"  # Q_i(x, a_replay), gradients to the critics
Q_PI = "q_pi_B"  # (marginal) min_i Q_i(x, a ~ pi), critics frozen: gradients to the policy only
LOG_W = "log_w_K1_B"  # log pi(a|s_k) for the action sampled at x
ACTION_LOG_STD = "action_log_std_B_A"
Q_NEXT_TARGET = "q_next_target_T2_B"  # Qbar_i(x', a' ~ pi), no gradient
LOG_W_NEXT = "log_w_next_K1_B"  # at x', no gradient
VALID_NEXT = "valid_next_B"  # optional bool mask, broadcast from the right: which transitions count (pixels: (B, T-1))


def masked_mean(x: torch.Tensor, mask_B: torch.Tensor | None = None) -> torch.Tensor:
    """Mean of ``x`` over the entries where ``mask_B`` (broadcast from the right over x's leading dims) is True; the
    plain mean without a mask; 0 if nothing is valid. ``torch.where``, not a product, so a NaN or inf outside the mask
    cannot leak in (0 * NaN = NaN), nor into the gradient; and no data-dependent shape or host sync (docs/design.md
    §10)."""
    if mask_B is None:
        return x.mean()
    mask = mask_B.expand_as(x)
    return torch.where(mask, x, 0.0).sum() / mask.sum().clamp(min=1)


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


def critic_loss(
    q_pred_T2_B: torch.Tensor, target_B: torch.Tensor, *, kind: str = "mse", valid_B: torch.Tensor | None = None
) -> torch.Tensor:
    """Sum over the twin critics of the mean regression loss to the (detached) TD target.

    ``B`` may be several dims (pixels with ``critic_particles="all"``: (K+1, B, T-1) particle x transition grids,
    averaged like the reference's ``F.mse_loss`` over the valid (K+1, B, T-1), ``visual_control/smac.py:158``);
    ``valid_B`` (bool, broadcast from the right) masks out the entries that are no transition (``masked_mean``).
    "mse" is the paper's / pytorch_sac's; "huber" (delta 1) is RLlib SAC's default, offered as an option.
    """
    if kind not in ("mse", "huber"):
        raise ValueError(f"critic loss kind={kind!r} is unknown; use 'mse' or 'huber'")
    error_T2_B = q_pred_T2_B - target_B.detach().unsqueeze(0)
    if valid_B is not None:
        error_T2_B = torch.where(valid_B, error_T2_B, 0.0)  # where, not a product: no NaN from outside the mask
    if kind == "mse":
        per_entry_T2_B = error_T2_B.square()
    else:
        per_entry_T2_B = F.huber_loss(error_T2_B, torch.zeros_like(error_T2_B), reduction="none", delta=1.0)
    if valid_B is None:
        return per_entry_T2_B.flatten(1).mean(dim=1).sum()
    count = valid_B.expand(q_pred_T2_B.shape[1:]).sum().clamp(min=1)  # valid entries per critic
    return (per_entry_T2_B.flatten(1).sum(dim=1) / count).sum()


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


@dataclass(frozen=True)
class ObjectiveSettings:
    """The config fields the losses read: SMACConfig's, resolved per modality (their defaults and meanings are the
    config's field table, ``algorithms/smac/smac_fields.py``; ``from_config`` is the way to build one)."""

    estimator: str
    mlmc_average_level0: bool
    td_entropy: str
    beta: float
    beta_scale: str
    critic_loss: str

    @classmethod
    def from_fields(cls, fields, **overrides) -> "ObjectiveSettings":
        """From a config's ``resolved_fields()`` (or ``training/fields.py: resolved_defaults``), with ``overrides``."""
        names = [f.name for f in dataclasses.fields(cls)]
        return cls(**{name: fields[name] for name in names} | overrides)

    @classmethod
    def from_config(cls, config, **overrides) -> "ObjectiveSettings":
        return cls.from_fields(config.resolved_fields(), **overrides)

    def entropy(self, log_w_K1_B: torch.Tensor) -> torch.Tensor:
        return estimators.entropy_estimate(log_w_K1_B, self.estimator, mlmc_average_level0=self.mlmc_average_level0)

    def entropy_and_mlmc_levels(self, log_w_K1_B: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``entropy`` and, for "mlmc" with K >= 1, the Eq. (7) level terms it is the sum of (kept for the metrics,
        so they are not computed twice); None otherwise."""
        if self.estimator == "mlmc" and log_w_K1_B.shape[0] > 1:
            delta_L1_B = estimators.mlmc_level_terms(log_w_K1_B, average_level0=self.mlmc_average_level0)
            return delta_L1_B.sum(dim=0), delta_L1_B  # = estimators.mlmc_entropy
        return self.entropy(log_w_K1_B), None


class Losses(NamedTuple):
    critic: torch.Tensor
    actor: torch.Tensor
    alpha: torch.Tensor
    target_B: torch.Tensor
    entropy_B: torch.Tensor
    cond_entropy_B: torch.Tensor
    alpha_value: torch.Tensor
    mlmc_delta_L1_B: torch.Tensor | None = None  # Eq. (7)'s level terms when entropy_B is their sum (for metrics)


def soft_td_target(
    fwd_out: dict, reward_next_B, terminated_next_B, *, alpha, discount_B, settings: ObjectiveSettings
) -> torch.Tensor:
    """Soft TD target with the entropy term ``settings.td_entropy`` chooses: Eq. (10) or Eq. (12)."""
    if settings.td_entropy == "conditional":  # -log pi(a'|s'), one latent (Eq. 12, reference smac.py:153)
        entropy_next_B = estimators.conditional_entropy(fwd_out[LOG_W_NEXT])
    else:  # the marginal estimate at x' (Eq. 10)
        entropy_next_B = settings.entropy(fwd_out[LOG_W_NEXT])
    return td_target(
        reward_next_B, terminated_next_B, fwd_out[Q_NEXT_TARGET], entropy_next_B, alpha=alpha, discount_B=discount_B
    )


def soft_actor_critic_losses(
    fwd_out: dict,
    reward_next_B: torch.Tensor,
    terminated_next_B: torch.Tensor,
    *,
    log_alpha: torch.Tensor,
    target_entropy: float,
    discount_B: torch.Tensor | float,
    settings: ObjectiveSettings,
) -> Losses:
    """Critic (TD target of Eq. 10/12), actor (Eq. 11) and temperature losses from a training forward pass."""
    alpha = log_alpha.exp().detach()
    target_B = soft_td_target(
        fwd_out, reward_next_B, terminated_next_B, alpha=alpha, discount_B=discount_B, settings=settings
    )
    critic = critic_loss(fwd_out[Q_PRED], target_B, kind=settings.critic_loss, valid_B=fwd_out.get(VALID_NEXT))
    log_w_K1_B = fwd_out[LOG_W]
    entropy_B, mlmc_delta_L1_B = settings.entropy_and_mlmc_levels(log_w_K1_B)  # H~ of Eq. (6)/(7)
    cond_entropy_B = estimators.conditional_entropy(log_w_K1_B)
    actor = actor_loss(
        fwd_out[Q_PI],
        entropy_B,
        alpha=alpha,
        beta=settings.beta,
        conditional_entropy_B=cond_entropy_B,
        beta_scale=settings.beta_scale,
    )  # Eq. (11)
    temperature = alpha_loss(log_alpha, entropy_B, target_entropy=target_entropy)
    return Losses(critic, actor, temperature, target_B, entropy_B, cond_entropy_B, alpha, mlmc_delta_L1_B)


@torch.no_grad()
def loss_metrics(
    fwd_out: dict, out: Losses, *, target_entropy: float, num_particles: int, settings: ObjectiveSettings
) -> dict:
    """Metrics as 0-d tensors (no host sync here; the two constants as floats), prefixed by component (critic/, actor/,
    alpha/, estimator/)."""
    q_pred_T2_B, valid_B = fwd_out[Q_PRED], fwd_out.get(VALID_NEXT)  # masked where some entries are no transition
    metrics = {
        "critic/loss": out.critic,
        "critic/q_mean": masked_mean(q_pred_T2_B, valid_B),
        "critic/q_max": q_pred_T2_B.max() if valid_B is None else torch.where(valid_B, q_pred_T2_B, -torch.inf).max(),
        "critic/target_mean": masked_mean(out.target_B, valid_B),
        "critic/td_error_abs": masked_mean((q_pred_T2_B - out.target_B).abs(), valid_B),
        "actor/loss": out.actor,
        "actor/q_pi": fwd_out[Q_PI].mean(),
        "actor/action_std": fwd_out[ACTION_LOG_STD].exp().mean(),
        "actor/gaussian_entropy_at_s0": gaussian_entropy(fwd_out[ACTION_LOG_STD]).mean(),
        "alpha/loss": out.alpha,
        "alpha/value": out.alpha_value,
        "alpha/target_entropy": float(target_entropy),  # constants as Python floats: no tensor per update
        f"estimator/entropy_{settings.estimator}": out.entropy_B.mean(),
        "estimator/conditional_entropy": out.cond_entropy_B.mean(),
        "estimator/num_particles": float(num_particles),
    }
    if out.mlmc_delta_L1_B is not None:  # estimator "mlmc" with K >= 1
        for level, delta_B in enumerate(out.mlmc_delta_L1_B):
            metrics[f"estimator/mlmc_delta_level{level}"] = delta_B.mean()  # Eq. (7) residuals
    return {k: v.detach() if torch.is_tensor(v) else v for k, v in metrics.items()}  # no graph kept alive by a metric
