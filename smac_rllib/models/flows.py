"""Conditional RealNVP policy (pure torch): pi(a|x) = tanh o f_L o ... o f_1 (z; x), z ~ N(0, I).

The paper's Flow2 / Flow4 baselines (Fig. 9): SAC whose policy is a normalizing flow, as in Haarnoja et al. 2018
("Latent space policies for hierarchical RL": a standard Gaussian base, RealNVP blocks conditioned on the state)
and Ward et al. 2019. Each block f_k is an affine coupling (Dinh et al. 2017) conditioned on x:

    u' = u * exp(s_k(x, (1 - m_k) u) * m_k) + t_k(x, (1 - m_k) u) * m_k

where m_k (0/1 per action dim) marks the dims block k transforms; the others pass through and condition it.
Its Jacobian is triangular, so ``log |det df_k/du| = sum_i m_ki s_ki``, and the exact log-likelihood of
a = tanh(u_L) is

    log pi(a|x) = log N(z; 0, I) - sum_k sum_i m_ki s_ki - sum_i log(1 - tanh(u_L,i)^2).

Masks alternate parity (block k transforms the dims i with (i + k) even); with a 1-D action every block
transforms dim 0 conditioned on x alone (a coupling needs two dims to split; the flow is then a stack of
state-dependent affine maps of a Gaussian). Each block's log-scale is softly bounded to
(-max_log_scale, max_log_scale) (``max_log_scale * tanh(raw / max_log_scale)``), and each conditioner's last layer
starts at zero, so the flow starts as the identity: pi(.|x) = tanh(N(0, I)) at initialization.

Legend: B = batch, A = action dim, X = conditioning (observation) dim.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from smac_rllib.core.distributions import tanh_log_det_jacobian
from smac_rllib.models.mlp import mlp

MAX_LOG_SCALE = 3.0  # per block: scale in (e^-3, e^3)


def coupling_masks(action_dim: int, num_blocks: int) -> list[torch.Tensor]:
    """m_k per block (1 = transformed by block k): alternating parity; all ones for a 1-D action."""
    if action_dim == 1:
        return [torch.ones(1) for _ in range(num_blocks)]
    index = torch.arange(action_dim)
    return [((index + k) % 2 == 0).float() for k in range(num_blocks)]


class AffineCoupling(nn.Module):
    """One conditional affine coupling block: (u_B_A, x_B_X) -> (u'_B_A, log|det du'/du|_B)."""

    def __init__(
        self,
        cond_dim: int,
        action_dim: int,
        mask: torch.Tensor,
        hidden_dim: int = 400,
        num_hidden_layers: int = 2,
        max_log_scale: float = MAX_LOG_SCALE,
    ):
        super().__init__()
        self.net = mlp(cond_dim + action_dim, hidden_dim, 2 * action_dim, num_hidden_layers)
        nn.init.zeros_(self.net[-1].weight)  # identity at initialization
        nn.init.zeros_(self.net[-1].bias)
        self.register_buffer("mask", mask.clone().float())
        self.max_log_scale = float(max_log_scale)

    def scale_shift(self, u_B_A: torch.Tensor, cond_B_X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(log-scale, shift), both zero outside the transformed dims."""
        raw_s_B_A, t_B_A = self.net(torch.cat([cond_B_X, u_B_A * (1.0 - self.mask)], dim=-1)).chunk(2, dim=-1)
        log_s_B_A = self.max_log_scale * torch.tanh(raw_s_B_A / self.max_log_scale) * self.mask
        return log_s_B_A, t_B_A * self.mask

    def forward(self, u_B_A: torch.Tensor, cond_B_X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        log_s_B_A, t_B_A = self.scale_shift(u_B_A, cond_B_X)
        return u_B_A * torch.exp(log_s_B_A) + t_B_A, log_s_B_A.sum(-1)

    def inverse(self, v_B_A: torch.Tensor, cond_B_X: torch.Tensor) -> torch.Tensor:
        """u with forward(u) = v (the untransformed dims are equal in u and v, so s and t are recomputed from v)."""
        log_s_B_A, t_B_A = self.scale_shift(v_B_A, cond_B_X)
        return (v_B_A - t_B_A) * torch.exp(-log_s_B_A)


class ConditionalRealNVP(nn.Module):
    """f = f_L o ... o f_1, each an ``AffineCoupling`` conditioned on x: (z, x) -> (u, sum_k log|det df_k|)."""

    def __init__(
        self,
        cond_dim: int,
        action_dim: int,
        num_blocks: int,
        hidden_dim: int = 400,
        num_hidden_layers: int = 2,
        max_log_scale: float = MAX_LOG_SCALE,
    ):
        super().__init__()
        if num_blocks < 1:
            raise ValueError(f"num_blocks={num_blocks!r} must be >= 1")
        self.blocks = nn.ModuleList(
            AffineCoupling(cond_dim, action_dim, mask, hidden_dim, num_hidden_layers, max_log_scale)
            for mask in coupling_masks(action_dim, num_blocks)
        )

    def forward(self, z_B_A: torch.Tensor, cond_B_X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        u_B_A, log_det_B = z_B_A, z_B_A.new_zeros(z_B_A.shape[:-1])
        for block in self.blocks:
            u_B_A, block_log_det_B = block(u_B_A, cond_B_X)
            log_det_B = log_det_B + block_log_det_B
        return u_B_A, log_det_B

    def inverse(self, u_B_A: torch.Tensor, cond_B_X: torch.Tensor) -> torch.Tensor:
        for block in reversed(self.blocks):
            u_B_A = block.inverse(u_B_A, cond_B_X)
        return u_B_A


def standard_normal_log_prob(z_B_A: torch.Tensor) -> torch.Tensor:
    return (-0.5 * z_B_A.pow(2) - 0.5 * math.log(2 * math.pi)).sum(-1)


class RealNVPTanhPolicy(nn.Module):
    """pi(a|x): z ~ N(0, I), u = f(z; x) (conditional RealNVP), a = tanh(u); exact log pi(a|x)."""

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        num_blocks: int,
        hidden_dim: int = 400,
        num_hidden_layers: int = 2,
        max_log_scale: float = MAX_LOG_SCALE,
    ):
        super().__init__()
        self.action_dim = action_dim
        self.flow = ConditionalRealNVP(obs_dim, action_dim, num_blocks, hidden_dim, num_hidden_layers, max_log_scale)

    def pre_tanh_and_log_prob(self, obs_B_X: torch.Tensor, z_B_A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """u = f(z; x) and log pi(tanh(u)|x) (base density - flow log-det - tanh log-det)."""
        u_B_A, log_det_B = self.flow(z_B_A, obs_B_X)
        return u_B_A, standard_normal_log_prob(z_B_A) - log_det_B - tanh_log_det_jacobian(u_B_A)

    def rsample(self, obs_B_X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(a_B_A, log pi(a|x)_B), reparameterized (gradients flow through a and log pi)."""
        z_B_A = torch.randn(*obs_B_X.shape[:-1], self.action_dim, device=obs_B_X.device, dtype=obs_B_X.dtype)
        u_B_A, log_prob_B = self.pre_tanh_and_log_prob(obs_B_X, z_B_A)
        return torch.tanh(u_B_A), log_prob_B

    def log_prob(self, obs_B_X: torch.Tensor, action_B_A: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
        """log pi(a|x) of given actions (inverse flow; actions clipped into (-1, 1) by ``eps``)."""
        u_B_A = torch.atanh(action_B_A.clamp(-1 + eps, 1 - eps))
        z_B_A = self.flow.inverse(u_B_A, obs_B_X)
        return self.pre_tanh_and_log_prob(obs_B_X, z_B_A)[1]

    def deterministic_action(self, obs_B_X: torch.Tensor) -> torch.Tensor:
        """tanh(f(0; x)): the base distribution's mode pushed through the flow (evaluation, ``explore=False``)."""
        zeros_B_A = torch.zeros(*obs_B_X.shape[:-1], self.action_dim, device=obs_B_X.device, dtype=obs_B_X.dtype)
        return torch.tanh(self.flow(zeros_B_A, obs_B_X)[0])
