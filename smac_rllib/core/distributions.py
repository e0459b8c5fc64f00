"""Tanh-squashed diagonal Gaussians, as pure functions (shapes broadcast; last dim = event dim).

The latent-variable policy needs ``log pi(a | s_k)`` of ONE action under MANY latents s_k. We keep the
pre-tanh sample ``u`` (a = tanh(u)) and evaluate ``log N(u; mu(s_k), std(s_k)) - sum log(1 - tanh(u)^2)``:
the Jacobian term does not depend on s_k, and no atanh of a saturated action is ever taken.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0  # pytorch_sac's log_std_bounds


def bound_log_std(raw: torch.Tensor, low: float = LOG_STD_MIN, high: float = LOG_STD_MAX) -> torch.Tensor:
    """Squash an unbounded network output into [low, high] (pytorch_sac's tanh rescaling)."""
    return low + 0.5 * (high - low) * (torch.tanh(raw) + 1.0)


def gaussian_log_prob(x: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """log N(x; mean, diag exp(log_std)^2), summed over the last dim."""
    z = (x - mean) * torch.exp(-log_std)
    return (-0.5 * z.pow(2) - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)


def tanh_log_det_jacobian(u: torch.Tensor) -> torch.Tensor:
    """log |d tanh(u) / du| summed over the last dim, stable form 2 (log 2 - u - softplus(-2u))."""
    return (2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))).sum(-1)


def gaussian_entropy(log_std: torch.Tensor) -> torch.Tensor:
    """Entropy of a diagonal Gaussian, summed over the last dim."""
    return (log_std + 0.5 * math.log(2 * math.pi * math.e)).sum(-1)
