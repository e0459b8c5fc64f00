"""A latent-variable policy whose marginal entropy is known in closed form (shared by tests and benchmarks).

q(s) = N(0, I_d),  pi(a|s) = N(W s + b, sigma^2 I_m)  =>  pi(a) = N(b, W W^T + sigma^2 I_m),
H[pi] = ½ log det(2 pi e (W W^T + sigma^2 I)).
"""

from __future__ import annotations

import math

import torch


class LinearGaussianLVM:
    def __init__(self, weight_M_D: torch.Tensor, sigma: float, bias_M: torch.Tensor | None = None):
        self.weight_M_D = weight_M_D
        self.sigma = sigma
        self.bias_M = bias_M if bias_M is not None else torch.zeros(weight_M_D.shape[0], dtype=weight_M_D.dtype)

    @property
    def action_dim(self) -> int:
        return self.weight_M_D.shape[0]

    @property
    def latent_dim(self) -> int:
        return self.weight_M_D.shape[1]

    def true_entropy(self) -> torch.Tensor:
        cov_M_M = self.weight_M_D @ self.weight_M_D.T + self.sigma**2 * torch.eye(
            self.action_dim, dtype=self.weight_M_D.dtype
        )
        return 0.5 * torch.logdet(2 * math.pi * math.e * cov_M_M)

    def log_pi(self, a_N_M: torch.Tensor, s_N_D: torch.Tensor) -> torch.Tensor:
        mean_N_M = s_N_D @ self.weight_M_D.T + self.bias_M
        z = (a_N_M - mean_N_M) / self.sigma
        return (-0.5 * z.pow(2) - math.log(self.sigma) - 0.5 * math.log(2 * math.pi)).sum(-1)

    def log_w(self, num_particles: int, num_samples: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """(K+1, N): row 0 for the s0 that generated a, rows 1..K for fresh s_k (reparameterized in W)."""
        dtype = self.weight_M_D.dtype
        s_K1_N_D = torch.randn(num_particles + 1, num_samples, self.latent_dim, generator=generator, dtype=dtype)
        eps_N_M = torch.randn(num_samples, self.action_dim, generator=generator, dtype=dtype)
        a_N_M = s_K1_N_D[0] @ self.weight_M_D.T + self.bias_M + self.sigma * eps_N_M
        return torch.stack([self.log_pi(a_N_M, s_K1_N_D[k]) for k in range(num_particles + 1)])
