"""Multi-modal one-step task of the paper's Appendix B.1 (Figure 7): a latent-variable policy trained with
the MLMC entropy (Eq. 7) covers all four optimal actions; a tanh-Gaussian SAC policy collapses onto one.

    python -m smac_rllib.experiments.multimodal --out DIR [--seed S] [--steps N] [--particles K] [--estimator E]

writes ``DIR/multimodal.json`` (modes covered, per-mode fractions, grid KL to the target, settings, wall time)
and ``DIR/multimodal.png`` (target density | LVP samples | Gaussian samples).

Task: actions a in [-1, 1]^2, no observation, reward r(a) = sum_m exp(-|a - c_m|^2 / (2 w^2)) with the four
centres c_m = (±0.5, ±0.5). Both policies maximize E[r(a)] + alpha * H[pi], whose optimum is the target
pi*(a) ∝ exp(r(a) / alpha): four well-separated modes (96% of its mass lies within 0.2 of a centre).

Initialization (our choice; App. B.1 does not specify it) decides the outcome, so it is explicit in the config:
both policies start centred on the origin with the same pre-tanh noise std e^-2 (what SAC's squashed log-std
gives for a zero output); the LVP's latent additionally spreads its initial marginal isotropically
(``init_mean_spread``, set by a data-dependent rescaling of the output layer). Reward gradients are local, so
each region of latent space is pulled to its nearest bump, and the MLMC entropy keeps the four masses apart
and balanced. Measured at 400 steps: ``init_mean_spread=0.35`` gave 4 modes on 20/20 seeds (0-19), 0.5 on 8/10
(2-3 modes on the others). With a broad Gaussian (``init_noise_std=0.5``) the tanh-Gaussian does not collapse
but stays a near-uniform hedge over the square (0 modes covered); either way it misses the target.

Legend for shape suffixes: B = batch, K = fresh particles, K1 = K + 1, D = latent dim, A = action dim (2),
H = hidden width, M = modes (4), N = evaluation samples, G = grid points, S = latents used to marginalize the
LVP density, C = a chunk of grid points, X = any leading shape.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path

import torch
from torch import nn

from smac_rllib.core.estimators import ESTIMATORS, entropy_estimate, mlmc_levels

ACTION_DIM = 2


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


# ----------------------------------------------------------------------------------------------- task (pure)
def mode_centres() -> torch.Tensor:
    """The four optimal actions, (M=4, A=2)."""
    return torch.tensor([[0.5, 0.5], [-0.5, 0.5], [-0.5, -0.5], [0.5, -0.5]])


def reward(a_B_A: torch.Tensor, centres_M_A: torch.Tensor, width: float) -> torch.Tensor:
    """Four Gaussian bumps r(a) = sum_m exp(-|a - c_m|^2 / (2 w^2)): (*, A) -> (*). ≈ 1 at each centre."""
    sq_dist_B_M = (a_B_A.unsqueeze(-2) - centres_M_A).pow(2).sum(-1)
    return torch.exp(-sq_dist_B_M / (2 * width**2)).sum(-1)


# ------------------------------------------------------------------------------------- tanh-Gaussian (pure)
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


# ------------------------------------------------------------------------------------------------- policies
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


# -------------------------------------------------------------------------------------------------- losses
def lvp_loss(policy: LatentVariablePolicy, cfg: MultimodalConfig) -> tuple[torch.Tensor, dict[str, float]]:
    """-(E[r(a)] + alpha * H_MLMC), the one-step max-entropy objective with the marginal entropy of Eq. (7)
    (or ``cfg.estimator``'s: the nested bound of Eq. 6, or an upper bound for the ablation).

    No stop-gradient anywhere: a (through s0 and the noise) and every fresh s_k are reparameterized, so the
    gradient flows through all K+1 rows of log_w, as in SMAC's actor loss.
    """
    u_B_A, s0_B_D = policy.sample(cfg.batch_size)
    r_B = reward(torch.tanh(u_B_A), mode_centres(), cfg.bump_width)
    log_w_K1_B = policy.log_w(u_B_A, s0_B_D, cfg.num_particles)
    entropy_B = entropy_estimate(log_w_K1_B, cfg.estimator)  # Eq. (7) by default
    loss = -(r_B + cfg.alpha * entropy_B).mean()
    return loss, {"reward": r_B.mean().item(), "entropy": entropy_B.mean().item()}


def gaussian_loss(policy: TanhGaussianPolicy, cfg: MultimodalConfig) -> tuple[torch.Tensor, dict[str, float]]:
    """-(E[r(a)] + alpha * H) with SAC's single-sample entropy -log pi(a) (unbiased)."""
    u_B_A = policy.sample(cfg.batch_size)
    r_B = reward(torch.tanh(u_B_A), mode_centres(), cfg.bump_width)
    entropy_B = -tanh_gaussian_log_prob(u_B_A, *policy.head())
    loss = -(r_B + cfg.alpha * entropy_B).mean()
    return loss, {"reward": r_B.mean().item(), "entropy": entropy_B.mean().item()}


def train(policy: nn.Module, loss_fn, cfg: MultimodalConfig) -> dict[str, float]:
    """cfg.steps Adam steps on loss_fn(policy, cfg); returns the last step's metrics."""
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    metrics: dict[str, float] = {}
    for _ in range(cfg.steps):
        loss, metrics = loss_fn(policy, cfg)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return metrics


# ---------------------------------------------------------------------------------------- evaluation (pure)
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


# ------------------------------------------------------------------------------------------------ plotting
def plot(
    path: Path,
    log_t_G: torch.Tensor,
    grid_size: int,
    lvp_N_A: torch.Tensor,
    gauss_N_A: torch.Tensor,
    titles: tuple[str, str],
) -> None:
    """Figure 7 of the paper: target density, LVP samples, Gaussian samples (2-D histograms on [-1, 1]^2)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 4))
    extent = (-1, 1, -1, 1)
    axes[0].imshow(
        torch.exp(log_t_G).reshape(grid_size, grid_size).numpy(), origin="lower", extent=extent, cmap="viridis"
    )
    axes[0].set_title("target ∝ exp(r(a)/α)")
    for ax, samples, title in zip(axes[1:], (lvp_N_A, gauss_N_A), titles, strict=True):
        ax.hist2d(
            samples[:, 0].numpy(), samples[:, 1].numpy(), bins=grid_size, range=[[-1, 1], [-1, 1]], cmap="viridis"
        )
        ax.set_title(title)
    for ax in axes:
        ax.set_xlim(-1, 1)
        ax.set_ylim(-1, 1)
        ax.set_aspect("equal")
        ax.set_xlabel("a[0]")
    axes[0].set_ylabel("a[1]")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ------------------------------------------------------------------------------------------------ driver
def check_particles(estimator: str, num_particles: int) -> None:
    """Eq. 7 needs K a power of two (``mlmc_levels`` raises with the nearest valid K); the other estimators take
    any K >= 1."""
    if estimator == "mlmc":
        mlmc_levels(num_particles)


def run(out_dir: Path, cfg: MultimodalConfig) -> dict:
    """Train both policies on the same budget, evaluate, write multimodal.json and multimodal.png."""
    check_particles(cfg.estimator, cfg.num_particles)
    start = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)

    torch.manual_seed(cfg.seed)
    lvp = LatentVariablePolicy(cfg)
    lvp_train = train(lvp, lvp_loss, cfg)
    torch.manual_seed(cfg.seed)
    gauss = TanhGaussianPolicy(cfg)
    gauss_train = train(gauss, gaussian_loss, cfg)

    torch.manual_seed(cfg.seed + 10_000)  # evaluation noise, independent of training
    with torch.no_grad():
        lvp_N_A = torch.tanh(lvp.sample(cfg.eval_samples)[0])
        gauss_N_A = torch.tanh(gauss.sample(cfg.eval_samples))
    grid_G_A, cell_area = grid_points(cfg.grid_size)
    log_t_G = normalize_on_grid(reward(grid_G_A, mode_centres(), cfg.bump_width) / cfg.alpha, cell_area)
    result = {
        "lvp": evaluate(lvp_N_A, lvp.log_prob(grid_G_A, cfg.eval_latents), log_t_G, cell_area, cfg)
        | {"final_train": lvp_train},
        "gaussian": evaluate(gauss_N_A, gauss.log_prob(grid_G_A), log_t_G, cell_area, cfg)
        | {"final_train": gauss_train},
        "seed": cfg.seed,
        "steps": cfg.steps,
        "K": cfg.num_particles,
        "estimator": cfg.estimator,
        "alpha": cfg.alpha,
        "config": dataclasses.asdict(cfg),
    }
    titles = (
        f"LVP + {cfg.estimator} (K={cfg.num_particles}): {result['lvp']['modes_covered']}/4 modes",
        f"tanh-Gaussian (SAC): {result['gaussian']['modes_covered']}/4 modes",
    )
    plot(out_dir / "multimodal.png", log_t_G, cfg.grid_size, lvp_N_A, gauss_N_A, titles)
    result["wall_time_s"] = round(time.perf_counter() - start, 2)
    (out_dir / "multimodal.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):  # one line on stderr, exit status 2 (argparse's convention)
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value} (try the default)")
    return value


def parse_args(argv: list[str] | None) -> tuple[Path, MultimodalConfig]:
    defaults = MultimodalConfig()
    parser = _OneLineParser(prog="python -m smac_rllib.experiments.multimodal", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="output directory (created if missing)")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--steps", type=_positive_int, default=defaults.steps, help="Adam steps per policy")
    parser.add_argument(
        "--particles",
        type=_positive_int,
        default=defaults.num_particles,
        help="K fresh latents for the entropy estimate (a power of two for mlmc)",
    )
    parser.add_argument(
        "--estimator",
        choices=sorted(ESTIMATORS),
        default=defaults.estimator,
        help="the LVP's marginal entropy: mlmc (Eq. 7, default), nested (Eq. 6), naive / iwae (upper bounds)",
    )
    parser.add_argument("--alpha", type=float, default=defaults.alpha, help="entropy temperature (> 0)")
    args = parser.parse_args(argv)
    try:
        check_particles(args.estimator, args.particles)
    except ValueError as err:
        parser.error(f"--particles: {err}")
    if not args.alpha > 0:
        parser.error(f"--alpha must be > 0, got {args.alpha} (try {defaults.alpha})")
    cfg = dataclasses.replace(
        defaults,
        seed=args.seed,
        steps=args.steps,
        num_particles=args.particles,
        estimator=args.estimator,
        alpha=args.alpha,
    )
    return args.out, cfg


def main(argv: list[str] | None = None) -> dict:
    torch.set_num_threads(1)
    out_dir, cfg = parse_args(argv)
    result = run(out_dir, cfg)
    for name in ("lvp", "gaussian"):
        r = result[name]
        print(f"{name:8s} modes_covered={r['modes_covered']} fractions={r['mode_fractions']} kl={r['kl_to_target']}")
    print(f"wrote {out_dir / 'multimodal.json'} and {out_dir / 'multimodal.png'} in {result['wall_time_s']} s")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
