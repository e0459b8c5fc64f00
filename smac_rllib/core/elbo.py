"""World-model ELBO of SMAC with pixels, paper Eq. (13) (Dreamer-v1 / PlaNet). Pure torch.

Legend for shape suffixes: B = batch of sequences, T = time, S = stochastic-state dim,
H, W, C = image height, width, channels. ``*batch`` = any leading batch shape.

Eq. (13): ELBO = E_q[ sum_t  log p(x_t | s_t) + log p(r_t | s_t) - KL( q(s_t | s_{t-1}, a_{t-1}, x_t)
                                                                     || p(s_t | s_{t-1}, a_{t-1}) ) ]

Every log-likelihood is a unit-variance Gaussian *including* its -0.5 log(2 pi) constant, so values match
the reference code (``Independent(Normal(mean, 1), ...).log_prob``).
"""

from __future__ import annotations

import math

import torch

__all__ = [
    "gaussian_image_log_lik",
    "reward_log_lik",
    "kl_gaussians",
    "gaussian_entropy",
    "free_nats_kl",
    "world_model_elbo_loss",
]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def gaussian_image_log_lik(image_mean: torch.Tensor, image_target: torch.Tensor) -> torch.Tensor:
    """log N(x | mean, I) summed over pixels and channels.

    image_mean, image_target: (*batch, H, W, C) floats in the same normalization ([-0.5, 0.5]) -> (*batch).
    """
    log_lik = -0.5 * (image_target - image_mean).square() - _HALF_LOG_2PI
    return log_lik.sum(dim=(-3, -2, -1))


def reward_log_lik(reward_mean: torch.Tensor, reward: torch.Tensor) -> torch.Tensor:
    """log N(r | mean, 1), elementwise. reward_mean, reward: (*batch) -> (*batch)."""
    return -0.5 * (reward - reward_mean).square() - _HALF_LOG_2PI


def kl_gaussians(
    post_mean: torch.Tensor, post_std: torch.Tensor, prior_mean: torch.Tensor, prior_std: torch.Tensor
) -> torch.Tensor:
    """KL( N(post_mean, post_std^2) || N(prior_mean, prior_std^2) ) of diagonal Gaussians, summed over S.

    All inputs: (*batch, S) -> (*batch). Gradients flow into both posterior and prior (Dreamer v1: no
    KL balancing, no stop-gradient).
    """
    var_ratio = (post_std / prior_std).square()
    mean_term = ((post_mean - prior_mean) / prior_std).square()
    return 0.5 * (var_ratio + mean_term - 1.0 - var_ratio.log()).sum(dim=-1)


def gaussian_entropy(std: torch.Tensor) -> torch.Tensor:
    """Differential entropy of a diagonal Gaussian, summed over S. std: (*batch, S) -> (*batch)."""
    return (std.log() + 0.5 + _HALF_LOG_2PI).sum(dim=-1)


def free_nats_kl(kl_B_T: torch.Tensor, free_nats: float = 3.0) -> torch.Tensor:
    """Dreamer-v1 free nats: ``max(mean_{B,T} KL, free_nats)`` -> scalar.

    The mean is taken *before* the clip (as in Dreamer v1 and the SMAC reference code), so the KL gets no
    gradient while its batch mean is below ``free_nats``.
    """
    return torch.clamp(kl_B_T.mean(), min=free_nats)


def world_model_elbo_loss(
    image_log_lik_B_T: torch.Tensor,
    reward_log_lik_B_T: torch.Tensor,
    kl_B_T: torch.Tensor,
    *,
    free_nats: float = 3.0,
    kl_scale: float = 1.0,
) -> torch.Tensor:
    """Negative ELBO per time step, Eq. (13): -(E[log p(x|s)] + E[log p(r|s)]) + kl_scale * max(E[KL], free_nats).

    image_log_lik_B_T, reward_log_lik_B_T, kl_B_T: (B, T) -> scalar (means over B and T, reference code).
    """
    log_lik = image_log_lik_B_T.mean() + reward_log_lik_B_T.mean()
    return -log_lik + kl_scale * free_nats_kl(kl_B_T, free_nats)  # Eq. (13), free nats as Dreamer v1
