"""The two policies of the multi-modal experiment (``multimodal.py``, paper App. B.1), neither with an observation:
a latent-variable policy (s ~ q(s), a = tanh(u), u ~ N(f(s))) and SAC's tanh-Gaussian, with the tanh-Gaussian
density they share. Shape suffixes as in ``multimodal.py``."""

from __future__ import annotations

import math

import torch
from torch import nn

from smac_rllib.experiments.multimodal_task import MultimodalConfig

ACTION_DIM = 2


# ------------------------------------------------------------------------------------ tanh-Gaussian (pure)
def squash_log_std(raw: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """Map an unbounded network output into [low, high] (as in SAC implementations, e.g. CleanRL)."""
    return low + 0.5 * (high - low) * (torch.tanh(raw) + 1)


def unsquash_log_std(log_std: float, low: float, high: float) -> float:
    """Inverse of squash_log_std, for initialization."""
    return math.atanh(2 * (log_std - low) / (high - low) - 1)


def log_tanh_jacobian(u_B_A: torch.Tensor) -> torch.Tensor:
    """sum_i log(1 - tanh(u_i)^2) = sum_i 2 (log 2 - u - softplus(-2u)), stable for large |u|: (*, A) -> (*)."""
    return (2 * (math.log(2.0) - u_B_A - nn.functional.softplus(-2 * u_B_A))).sum(-1)


def tanh_gaussian_log_prob(u_B_A: torch.Tensor, mean_B_A: torch.Tensor, log_std_B_A: torch.Tensor) -> torch.Tensor:
    """log pi(a) of a = tanh(u), u ~ N(mean, diag std^2), from the pre-tanh u; shapes broadcast, -> (*).

    Change of variables (SAC, Haarnoja et al. 2018, App. C Eq. 21): log N(u) - sum_i log(1 - tanh(u_i)^2).
    """
    z = (u_B_A - mean_B_A) * torch.exp(-log_std_B_A)
    log_normal = (-0.5 * z.pow(2) - log_std_B_A - 0.5 * math.log(2 * math.pi)).sum(-1)
    return log_normal - log_tanh_jacobian(u_B_A)


def atanh_clamped(a: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Pre-tanh value of an action in (-1, 1); clamps away from ±1 so grid edges stay finite."""
    return torch.atanh(a.clamp(-1 + eps, 1 - eps))


# ------------------------------------------------------------------------------------------------ policies
class LatentVariablePolicy(nn.Module):
    """s ~ q(s) = N(mu, diag sigma^2) (unconditional: there is no observation), a = tanh(u), u ~ N(f(s))."""

    def __init__(self, cfg: MultimodalConfig):
        super().__init__()
        self.cfg = cfg
        self.latent_mu_D = nn.Parameter(torch.zeros(cfg.latent_dim))
        self.latent_log_std_D = nn.Parameter(torch.full((cfg.latent_dim,), math.log(cfg.latent_init_std)))
        self.net = nn.Sequential(
            nn.Linear(cfg.latent_dim, cfg.hidden),
            nn.Tanh(),
            nn.Linear(cfg.hidden, cfg.hidden),
            nn.Tanh(),
            nn.Linear(cfg.hidden, 2 * ACTION_DIM),
        )
        for layer in self.net[::2]:  # orthogonal weights, zero biases (CleanRL's layer_init)
            nn.init.orthogonal_(layer.weight, gain=5 / 3)
            nn.init.zeros_(layer.bias)
        with torch.no_grad():
            self.net[-1].weight[ACTION_DIM:] *= 0.01  # start with the same conditional std for every s
            self.net[-1].bias[ACTION_DIM:] = unsquash_log_std(
                math.log(cfg.init_noise_std), cfg.log_std_min, cfg.log_std_max
            )
            self._whiten_initial_means(cfg.init_mean_spread)

    @torch.no_grad()
    def _whiten_initial_means(self, std: float, num_latents: int = 4096) -> None:
        """Data-dependent init: rescale the mean's output weights so that, under q, the pre-tanh means have
        covariance std^2 I. A broad, isotropic initial marginal whatever the random init drew."""
        feat_S_H = self.net[:-1](self.sample_latent(num_latents))
        weight_A_H = self.net[-1].weight[:ACTION_DIM]
        chol_A_A = torch.linalg.cholesky(torch.cov((feat_S_H @ weight_A_H.T).T))
        self.net[-1].weight[:ACTION_DIM] = std * torch.linalg.solve_triangular(chol_A_A, weight_A_H, upper=False)

    def sample_latent(self, *shape: int) -> torch.Tensor:
        """Reparameterized s ~ q: (*shape, D)."""
        eps = torch.randn(*shape, self.cfg.latent_dim)
        return self.latent_mu_D + torch.exp(self.latent_log_std_D) * eps

    def head(self, s_X_D: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(mean, log_std) of the pre-tanh Gaussian pi(u|s): (*, D) -> 2 x (*, A)."""
        mean_X_A, raw_X_A = self.net(s_X_D).chunk(2, dim=-1)
        return mean_X_A, squash_log_std(raw_X_A, self.cfg.log_std_min, self.cfg.log_std_max)

    def sample(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparameterized (u_B_A, s0_B_D): a = tanh(u) with u ~ pi(u|s0), s0 ~ q."""
        s0_B_D = self.sample_latent(n)
        mean_B_A, log_std_B_A = self.head(s0_B_D)
        u_B_A = mean_B_A + torch.exp(log_std_B_A) * torch.randn_like(mean_B_A)
        return u_B_A, s0_B_D

    def log_w(self, u_B_A: torch.Tensor, s0_B_D: torch.Tensor, num_particles: int) -> torch.Tensor:
        """log_w (K+1, B) for the estimators: row 0 = log pi(a|s0), rows 1..K = log pi(a|s_k), fresh s_k ~ q."""
        s_K1_B_D = torch.cat([s0_B_D.unsqueeze(0), self.sample_latent(num_particles, u_B_A.shape[0])])
        mean_K1_B_A, log_std_K1_B_A = self.head(s_K1_B_D)
        return tanh_gaussian_log_prob(u_B_A.unsqueeze(0), mean_K1_B_A, log_std_K1_B_A)

    @torch.no_grad()
    def log_prob(self, a_G_A: torch.Tensor, num_latents: int, chunk: int = 1024) -> torch.Tensor:
        """Marginal log pi(a) ≈ log mean_{j<=S} pi(a|s_j), s_j ~ q (evaluation only): (G, A) -> (G,)."""
        mean_S_A, log_std_S_A = self.head(self.sample_latent(num_latents))
        out = []
        for u_C_A in atanh_clamped(a_G_A).split(chunk):
            log_pi_C_S = tanh_gaussian_log_prob(u_C_A.unsqueeze(1), mean_S_A, log_std_S_A)
            out.append(torch.logsumexp(log_pi_C_S, dim=1) - math.log(num_latents))
        return torch.cat(out)


class TanhGaussianPolicy(nn.Module):
    """SAC's policy without an observation: a = tanh(u), u ~ N(mean, diag std^2), both learned."""

    def __init__(self, cfg: MultimodalConfig):
        super().__init__()
        self.cfg = cfg
        self.mean_A = nn.Parameter(torch.zeros(ACTION_DIM))
        self.raw_log_std_A = nn.Parameter(
            torch.full((ACTION_DIM,), unsquash_log_std(math.log(cfg.init_noise_std), cfg.log_std_min, cfg.log_std_max))
        )

    def head(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.mean_A, squash_log_std(self.raw_log_std_A, self.cfg.log_std_min, self.cfg.log_std_max)

    def sample(self, n: int) -> torch.Tensor:
        """Reparameterized pre-tanh u: (B, A)."""
        mean_A, log_std_A = self.head()
        return mean_A + torch.exp(log_std_A) * torch.randn(n, ACTION_DIM)

    @torch.no_grad()
    def log_prob(self, a_G_A: torch.Tensor) -> torch.Tensor:
        return tanh_gaussian_log_prob(atanh_clamped(a_G_A), *self.head())
