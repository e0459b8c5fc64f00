"""Twin Q-networks (clipped double Q), one forward for both heads."""

from __future__ import annotations

import torch
from torch import nn

from smac_rllib.models.mlp import mlp


class TwinQ(nn.Module):
    """Q_1, Q_2 (x, a) -> (2, *batch). Paper state-based critic: Q(x, a) (Alg. 1); pixels: Q(s, a) (Eq. 12)."""

    def __init__(
        self, obs_dim: int, action_dim: int, hidden_dim: int = 256, num_hidden_layers: int = 2, activation=nn.ReLU
    ):
        super().__init__()
        self.q1 = mlp(obs_dim + action_dim, hidden_dim, 1, num_hidden_layers, activation)
        self.q2 = mlp(obs_dim + action_dim, hidden_dim, 1, num_hidden_layers, activation)

    def forward(self, obs_X: torch.Tensor, action_A: torch.Tensor) -> torch.Tensor:
        obs_action = torch.cat([obs_X, action_A], dim=-1)
        return torch.stack([self.q1(obs_action).squeeze(-1), self.q2(obs_action).squeeze(-1)])


class frozen:
    """Context manager: temporarily set requires_grad=False on a module's parameters (restores each flag)."""

    def __init__(self, module: nn.Module):
        self.params = list(module.parameters())

    def __enter__(self):
        self.flags = [p.requires_grad for p in self.params]
        for p in self.params:
            p.requires_grad_(False)

    def __exit__(self, *exc):
        for p, flag in zip(self.params, self.flags, strict=True):
            p.requires_grad_(flag)
