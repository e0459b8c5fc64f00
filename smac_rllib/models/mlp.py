"""Plain MLPs (pytorch_sac style: Linear-ReLU blocks, linear output)."""

from __future__ import annotations

from torch import nn


def mlp(in_dim: int, hidden_dim: int, out_dim: int, num_hidden_layers: int = 2, activation=nn.ReLU) -> nn.Sequential:
    """``num_hidden_layers`` hidden layers of width ``hidden_dim``; 0 hidden layers gives one Linear."""
    layers: list[nn.Module] = []
    dim = in_dim
    for _ in range(num_hidden_layers):
        layers += [nn.Linear(dim, hidden_dim), activation()]
        dim = hidden_dim
    layers.append(nn.Linear(dim, out_dim))
    return nn.Sequential(*layers)
