"""The latent-variable policy (LVP) of SMAC: pi(a|h) = ∫ pi(a|s) q(s|h) ds.

Legend: B = batch, K1 = K + 1 latents (s0 first), X = observation features, S = latent dim, A = action dim.

q(s|x) and pi(a|s) are factorized Gaussians; actions are tanh-squashed. ``sample`` returns the action drawn
from s0 together with ``log_w_K1_B`` = log pi(a|s_k) for s0 and K fresh particles: the input of every
estimator in ``smac_rllib.core.estimators``.
"""

from __future__ import annotations

from dataclasses import dataclass

import math

import torch
import torch.nn.functional as F
from torch import nn

from smac_rllib.core.distributions import bound_log_std, gaussian_log_prob, tanh_log_det_jacobian
from smac_rllib.models.mlp import mlp


@dataclass
class PolicySample:
    action_B_A: torch.Tensor  # a = tanh(u), u ~ pi(.|s0)
    log_w_K1_B: torch.Tensor  # log pi(a | s_k), k = 0..K (row 0: the s0 that produced a)
    latent_K1_B_S: torch.Tensor
    action_log_std_B_A: torch.Tensor  # log-std of pi(.|s0), for metrics


HEADS = ("sac", "dreamer")
DREAMER_MEAN_SCALE, DREAMER_INIT_STD, DREAMER_MIN_STD = 5.0, 5.0, 1e-4  # reference ActionDecoder defaults


def sample_given_params(
    mean_K1_B_A: torch.Tensor, log_std_K1_B_A: torch.Tensor, latent_K1_B_S=None, noise_B_A: torch.Tensor | None = None
) -> PolicySample:
    """u ~ N(mean[0], std[0]), a = tanh(u), and log pi(a | s_k) under every row's Gaussian (exact, via u).
    ``noise_B_A``: the standard normal draw of u (default: drawn here)."""
    if noise_B_A is None:
        noise_B_A = torch.randn_like(mean_K1_B_A[0])
    u_B_A = mean_K1_B_A[0] + log_std_K1_B_A[0].exp() * noise_B_A
    log_det_B = tanh_log_det_jacobian(u_B_A)  # same for every s_k: a is fixed
    log_w_K1_B = gaussian_log_prob(u_B_A.unsqueeze(0), mean_K1_B_A, log_std_K1_B_A) - log_det_B
    return PolicySample(torch.tanh(u_B_A), log_w_K1_B, latent_K1_B_S, log_std_K1_B_A[0])


def own_first_log_w(
    mean_K1_B_A: torch.Tensor, log_std_K1_B_A: torch.Tensor, noise_K1_B_A: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """One action per latent, a_r = tanh(u_r), u_r ~ pi(.|s_r), with its log-weights under every latent, own first.

    Returns (action_K1_B_A, log_w_K1_R_B) (R = K+1 actions): log_w[0, r] = log pi(a_r | s_r), rows 1..K the
    other latents in index order -- the input of the entropy estimators for every particle's own action (the
    reference's per-particle next action, ``visual_control/smac.py:149``, with a marginal entropy estimate).
    """
    K1 = mean_K1_B_A.shape[0]
    if noise_K1_B_A is None:
        noise_K1_B_A = torch.randn_like(mean_K1_B_A)
    u_R_B_A = mean_K1_B_A + log_std_K1_B_A.exp() * noise_K1_B_A
    log_w_J_R_B = gaussian_log_prob(u_R_B_A.unsqueeze(0), mean_K1_B_A.unsqueeze(1), log_std_K1_B_A.unsqueeze(1))
    log_w_J_R_B = log_w_J_R_B - tanh_log_det_jacobian(u_R_B_A)  # latent j (rows) x action r (columns)
    idx = torch.arange(K1, device=u_R_B_A.device)
    order_R_K1 = torch.stack([torch.cat([idx[r : r + 1], idx[:r], idx[r + 1 :]]) for r in range(K1)])
    index_K1_R_B = order_R_K1.T.reshape(K1, K1, *([1] * (log_w_J_R_B.dim() - 2))).expand_as(log_w_J_R_B)
    return torch.tanh(u_R_B_A), torch.gather(log_w_J_R_B, 0, index_K1_R_B)


class TanhGaussianHead(nn.Module):
    """pi(a|s): MLP(s) -> (mean, log_std) of u, a = tanh(u). Evaluates one action under many latents.

    ``head="sac"`` (states; pytorch_sac): log_std = tanh-rescaled into [-5, 2], mean unbounded.
    ``head="dreamer"`` (pixels; the reference's ``ActionDecoder``, ``visual_control/network.py:254-315``):
    mean = 5 tanh(mu / 5), std = softplus(raw + c) + 1e-4 with c = log(exp(init_std - 1)) = init_std - 1 = 4
    exactly as written at ``network.py:272`` (Dreamer's own code has log(exp(init_std) - 1), i.e. an initial
    std of 5; the reference's line gives softplus(4) = 4.02 at raw = 0; docs/fidelity.md).
    Either way ``log_std`` is exact, so every log pi(a|s_k) fed to the estimators is exact.
    """

    def __init__(
        self,
        latent_dim: int,
        action_dim: int,
        hidden_dim: int,
        num_hidden_layers: int,
        activation=nn.ReLU,
        head: str = "sac",
    ):
        super().__init__()
        if head not in HEADS:
            raise ValueError(f"actor head={head!r} is unknown; use one of {HEADS}")
        self.action_dim = action_dim
        self.head = head
        self.raw_std_shift = math.log(math.exp(DREAMER_INIT_STD - 1))  # network.py:272, = 4.0
        self.net = mlp(latent_dim, hidden_dim, 2 * action_dim, num_hidden_layers, activation)

    def params(self, latent_S: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean_A, raw_A = self.net(latent_S).chunk(2, dim=-1)
        if self.head == "dreamer":  # network.py:304-305
            mean_A = DREAMER_MEAN_SCALE * torch.tanh(mean_A / DREAMER_MEAN_SCALE)
            return mean_A, torch.log(F.softplus(raw_A + self.raw_std_shift) + DREAMER_MIN_STD)
        return mean_A, bound_log_std(raw_A)

    def sample_given_latents(self, latent_K1_B_S: torch.Tensor) -> PolicySample:
        """a ~ pi(.|s0) with s0 = latent_K1_B_S[0], and log pi(a|s_k) for every row k (Eq. 6 inputs)."""
        mean_K1_B_A, log_std_K1_B_A = self.params(latent_K1_B_S)  # all K+1 latents in one pass
        return sample_given_params(mean_K1_B_A, log_std_K1_B_A, latent_K1_B_S)

    def sample_action(self, latent_B_S: torch.Tensor) -> torch.Tensor:
        """a = tanh(u), u ~ pi(.|s): ``sample_given_latents(latent_B_S[None]).action_B_A`` (same draw from the
        global RNG, same numbers) without the log-weights, which acting does not use."""
        mean_B_A, log_std_B_A = self.params(latent_B_S)
        return torch.tanh(mean_B_A + log_std_B_A.exp() * torch.randn_like(mean_B_A))

    def mean_action(self, latent_S: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.params(latent_S)[0])


class LatentPolicy(nn.Module):
    """q(s|x): MLP -> (mean, log_std) of s;  pi(a|s): ``TanhGaussianHead``.

    The paper's state-based SMAC makes q(s|x) a 2-layer MLP (width 256) and trains q and pi together
    through the actor loss (Alg. 1). For pixels q is the RSSM belief and only the head is used (Alg. 2).
    """

    def __init__(
        self, obs_dim: int, action_dim: int, latent_dim: int, hidden_dim: int = 256, num_hidden_layers: int = 2
    ):
        super().__init__()
        self.latent_dim = latent_dim
        self.action_dim = action_dim
        self.latent_encoder = mlp(obs_dim, hidden_dim, 2 * latent_dim, num_hidden_layers)  # q(s|x)
        self.action_head = TanhGaussianHead(latent_dim, action_dim, hidden_dim, num_hidden_layers)  # pi(a|s)

    def latent_params(self, obs_B_X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean_B_S, raw_B_S = self.latent_encoder(obs_B_X).chunk(2, dim=-1)
        return mean_B_S, bound_log_std(raw_B_S)

    def sample_latents(self, obs_B_X: torch.Tensor, num_latents: int) -> torch.Tensor:
        """Reparameterized s ~ q(s|x): (num_latents, B, S)."""
        mean_B_S, log_std_B_S = self.latent_params(obs_B_X)
        eps_N_B_S = torch.randn(num_latents, *mean_B_S.shape, device=mean_B_S.device, dtype=mean_B_S.dtype)
        return mean_B_S + log_std_B_S.exp() * eps_N_B_S

    def sample(self, obs_B_X: torch.Tensor, num_particles: int) -> PolicySample:
        """a ~ pi(.|s0), s0 ~ q(.|x), plus log pi(a|s_k) for s0 and K fresh s_k ~ q(.|x) (Eq. 6 inputs)."""
        return self.action_head.sample_given_latents(self.sample_latents(obs_B_X, num_particles + 1))

    @torch.no_grad()
    def deterministic_action(self, obs_B_X: torch.Tensor) -> torch.Tensor:
        """Evaluation action: tanh of pi's mean at the mean latent of q(s|x)."""
        return self.action_head.mean_action(self.latent_params(obs_B_X)[0])
