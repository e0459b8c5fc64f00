"""Tanh-squashed Gaussian-mixture policy (pure torch), the MOE5 / MOE10 baselines of the paper (Ren et al. 2021).

pi(a|x) = sum_k w_k(x) N(u; mu_k(x), diag sigma_k(x)^2) / |det d tanh(u)/du|, a = tanh(u). As in Ren et al.'s
SAC code (PMOE): one MLP trunk on x, linear heads for the K experts' means and log-stds, and a linear softmax
gate on x for the mixing weights w(x). The log-likelihood is exact (log-sum-exp over the experts).

Legend: B = batch, K = experts, A = action dim, X = observation dim.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from smac_rllib.core.distributions import bound_log_std, gaussian_log_prob, tanh_log_det_jacobian
from smac_rllib.models.mlp import mlp


def mixture_log_prob(
    u_B_A: torch.Tensor, log_w_B_K: torch.Tensor, mean_B_K_A: torch.Tensor, log_std_B_K_A: torch.Tensor
) -> torch.Tensor:
    """log sum_k w_k N(u; mu_k, sigma_k^2) (pre-tanh), computed as a log-sum-exp; ``log_w`` normalized log-weights."""
    log_expert_B_K = gaussian_log_prob(u_B_A.unsqueeze(-2), mean_B_K_A, log_std_B_K_A)
    return torch.logsumexp(log_w_B_K + log_expert_B_K, dim=-1)


def tanh_mixture_log_prob(
    u_B_A: torch.Tensor, log_w_B_K: torch.Tensor, mean_B_K_A: torch.Tensor, log_std_B_K_A: torch.Tensor
) -> torch.Tensor:
    """log pi(tanh(u)|x): the mixture's density of u minus the tanh log-det (a = tanh(u))."""
    return mixture_log_prob(u_B_A, log_w_B_K, mean_B_K_A, log_std_B_K_A) - tanh_log_det_jacobian(u_B_A)


def actor_param_count(
    obs_dim: int, action_dim: int, hidden_dim: int, num_experts: int, num_hidden_layers: int = 2
) -> int:
    """Parameters of ``GaussianMixtureTanhPolicy`` (trunk + experts' heads + gate), without building it."""
    trunk = (obs_dim + 1) * hidden_dim + (num_hidden_layers - 1) * (hidden_dim + 1) * hidden_dim
    heads = (hidden_dim + 1) * 2 * num_experts * action_dim
    gate = (obs_dim + 1) * num_experts
    return trunk + heads + gate


def gaussian_actor_param_count(obs_dim: int, action_dim: int, hidden_dim: int, num_hidden_layers: int = 2) -> int:
    """Parameters of a SAC actor MLP(x) -> (mean, log_std): what ``SACBaseline``'s actor has."""
    return (
        (obs_dim + 1) * hidden_dim
        + (num_hidden_layers - 1) * (hidden_dim + 1) * hidden_dim
        + (hidden_dim + 1) * 2 * action_dim
    )


def matched_hidden_dim(
    obs_dim: int, action_dim: int, num_experts: int, target_params: int, num_hidden_layers: int = 2
) -> int:
    """The trunk width whose mixture actor has about ``target_params`` parameters (e.g. the SAC actor's)."""
    best, best_gap = 1, math.inf
    low, high = 1, 4 * max(int(math.sqrt(max(target_params, 1))), 1) + 8
    while low <= high:  # the count grows with the width: binary search, then the closer neighbour
        mid = (low + high) // 2
        if actor_param_count(obs_dim, action_dim, mid, num_experts, num_hidden_layers) < target_params:
            low = mid + 1
        else:
            high = mid - 1
    for width in (max(low - 1, 1), low):
        gap = abs(actor_param_count(obs_dim, action_dim, width, num_experts, num_hidden_layers) - target_params)
        if gap < best_gap:
            best, best_gap = width, gap
    return best


class GaussianMixtureTanhPolicy(nn.Module):
    """K tanh-Gaussian experts on a shared trunk + a linear softmax gate w(x)."""

    def __init__(
        self, obs_dim: int, action_dim: int, num_experts: int, hidden_dim: int = 400, num_hidden_layers: int = 2
    ):
        super().__init__()
        self.action_dim, self.num_experts = action_dim, num_experts
        self.trunk = mlp(
            obs_dim, hidden_dim, 2 * num_experts * action_dim, num_hidden_layers
        )  # ReLU trunk + linear heads
        self.gate = nn.Linear(obs_dim, num_experts)

    def params(self, obs_B_X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(log w_B_K normalized, mean_B_K_A, log_std_B_K_A) with log-stds in pytorch_sac's bounds [-5, 2]."""
        out = self.trunk(obs_B_X).unflatten(-1, (self.num_experts, 2 * self.action_dim))
        mean_B_K_A, raw_B_K_A = out.chunk(2, dim=-1)
        return torch.log_softmax(self.gate(obs_B_X), dim=-1), mean_B_K_A, bound_log_std(raw_B_K_A)

    def rsample_experts(self, obs_B_X: torch.Tensor):
        """One reparameterized pre-tanh sample per expert: (u_B_K_A, (log w, mean, log_std))."""
        log_w_B_K, mean_B_K_A, log_std_B_K_A = self.params(obs_B_X)
        u_B_K_A = mean_B_K_A + torch.exp(log_std_B_K_A) * torch.randn_like(mean_B_K_A)
        return u_B_K_A, (log_w_B_K, mean_B_K_A, log_std_B_K_A)

    def rsample(self, obs_B_X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """a ~ pi(.|x): expert k ~ Categorical(w(x)), then its Gaussian (reparameterized), squashed; exact log
        pi(a|x)."""
        u_B_K_A, params = self.rsample_experts(obs_B_X)
        k_B = torch.distributions.Categorical(logits=params[0].detach()).sample()
        u_B_A = u_B_K_A.gather(-2, k_B[..., None, None].expand(*k_B.shape, 1, self.action_dim)).squeeze(-2)
        return torch.tanh(u_B_A), tanh_mixture_log_prob(u_B_A, *params)

    def deterministic_action(self, obs_B_X: torch.Tensor) -> torch.Tensor:
        """tanh of the mean of the most probable expert (evaluation, ``explore=False``)."""
        log_w_B_K, mean_B_K_A, _ = self.params(obs_B_X)
        k_B = log_w_B_K.argmax(-1)
        return torch.tanh(
            mean_B_K_A.gather(-2, k_B[..., None, None].expand(*k_B.shape, 1, self.action_dim)).squeeze(-2)
        )
