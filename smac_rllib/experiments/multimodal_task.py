"""The one-step task of the multi-modal experiment (``multimodal.py``, paper App. B.1): its settings, the reward's
four bumps, and how a policy's samples are scored (modes covered, per-mode fractions, KL to the target on a grid).
Shape suffixes as in ``multimodal.py``."""

from __future__ import annotations

import dataclasses
import math

import torch


@dataclasses.dataclass(frozen=True)
class MultimodalConfig:
    seed: int = 0
    steps: int = 1500  # Adam steps, identical for both policies
    batch_size: int = 128  # actions per step
    lr: float = 3e-3  # Adam learning rate, both policies
    alpha: float = 0.1  # entropy temperature; target ∝ exp(r / alpha) has 96% of its mass within 0.2 of a centre
    bump_width: float = 0.2  # w of each reward bump; each target mode has std ≈ w * sqrt(alpha) ≈ 0.063
    num_particles: int = 16  # K fresh latents for the MLMC entropy (power of two, Eq. 7); reference code: num_p
    estimator: str = (
        "mlmc"  # the LVP's marginal entropy: mlmc (Eq. 7), nested (Eq. 6); naive / iwae: upper bounds (ablation)
    )
    latent_dim: int = 4  # D of s ~ q(s) = N(mu, diag sigma^2)
    hidden: int = 32  # width of the 2-layer MLP s -> (mean, log_std)
    latent_init_std: float = 1.0  # initial sigma of q(s)
    init_noise_std: float = math.exp(-2)  # initial std of the pre-tanh Gaussian: pi(u|s) for the LVP, pi(u) for SAC
    init_mean_spread: float = 0.35  # LVP only: initial std, over s ~ q, of the pre-tanh mean (its latent's reach)
    log_std_min: float = -5.0  # SAC-style squashing range of the pre-tanh log-std
    log_std_max: float = 1.0
    eval_samples: int = 10_000  # N samples used to count modes
    mode_radius: float = 0.2  # a sample belongs to a mode within this distance of its centre
    mode_min_fraction: float = 0.1  # a mode is covered when at least this fraction of samples is in it
    grid_size: int = 100  # cells per axis of the [-1, 1]^2 KL grid
    eval_latents: int = 2048  # S latents to marginalize the LVP density on the grid


# --------------------------------------------------------------------------------------------- task (pure)
def mode_centres() -> torch.Tensor:
    """The four optimal actions, (M=4, A=2)."""
    return torch.tensor([[0.5, 0.5], [-0.5, 0.5], [-0.5, -0.5], [0.5, -0.5]])


def reward(a_B_A: torch.Tensor, centres_M_A: torch.Tensor, width: float) -> torch.Tensor:
    """Four Gaussian bumps r(a) = sum_m exp(-|a - c_m|^2 / (2 w^2)): (*, A) -> (*). ≈ 1 at each centre."""
    sq_dist_B_M = (a_B_A.unsqueeze(-2) - centres_M_A).pow(2).sum(-1)
    return torch.exp(-sq_dist_B_M / (2 * width**2)).sum(-1)


# --------------------------------------------------------------------------------------- evaluation (pure)
def mode_fractions(a_N_A: torch.Tensor, centres_M_A: torch.Tensor, radius: float) -> torch.Tensor:
    """Fraction of samples within `radius` of each centre: (N, A), (M, A) -> (M,)."""
    dist_N_M = torch.cdist(a_N_A, centres_M_A)
    return (dist_N_M <= radius).float().mean(0)


def count_modes(fractions_M: torch.Tensor, min_fraction: float) -> int:
    return int((fractions_M >= min_fraction).sum().item())


def grid_points(n: int) -> tuple[torch.Tensor, float]:
    """Cell centres of an n x n grid on [-1, 1]^2 as (G = n*n, A), row-major with y outer; and the cell area."""
    centres_n = -1 + (torch.arange(n) + 0.5) * (2.0 / n)
    y, x = torch.meshgrid(centres_n, centres_n, indexing="ij")
    return torch.stack([x.reshape(-1), y.reshape(-1)], dim=-1), (2.0 / n) ** 2


def normalize_on_grid(log_density_G: torch.Tensor, cell_area: float) -> torch.Tensor:
    """Log-density renormalized so that sum_g exp(.) * cell_area = 1 (G,) -> (G,)."""
    return log_density_G - torch.logsumexp(log_density_G, 0) - math.log(cell_area)


def kl_on_grid(log_p_G: torch.Tensor, log_t_G: torch.Tensor, cell_area: float) -> float:
    """KL(p || t) ≈ sum_g p_g (log p_g - log t_g) * area, both densities renormalized on the grid."""
    log_p_G = normalize_on_grid(log_p_G, cell_area)
    log_t_G = normalize_on_grid(log_t_G, cell_area)
    return float((torch.exp(log_p_G) * (log_p_G - log_t_G)).sum() * cell_area)


def evaluate(
    samples_N_A: torch.Tensor, log_p_G: torch.Tensor, log_t_G: torch.Tensor, cell_area: float, cfg: MultimodalConfig
) -> dict:
    """The JSON block of one policy."""
    centres_M_A = mode_centres()
    fractions_M = mode_fractions(samples_N_A, centres_M_A, cfg.mode_radius)
    return {
        "modes_covered": count_modes(fractions_M, cfg.mode_min_fraction),
        "mode_centres": centres_M_A.tolist(),
        "mode_fractions": [round(f, 4) for f in fractions_M.tolist()],
        "kl_to_target": round(kl_on_grid(log_p_G, log_t_G, cell_area), 4),
        "mean_reward": round(reward(samples_N_A, centres_M_A, cfg.bump_width).mean().item(), 4),
    }
