"""SLAC's networks (Lee et al. 2020, "Stochastic Latent Actor-Critic"), pure torch: the sequential latent variable
model with two latent levels, the actor on the observation-action history, and the history features.

Structure and sizes follow the authors' TF code (``alexlee-gk/slac``,
``slac/agents/slac/model_distribution_network.py``, ``ModelDistributionNetwork``) and its widely used PyTorch port
(``toshikwa/slac.pytorch``, ``slac/network/latent.py``).

Legend: B = sequences, T = steps per sequence (the replayed L + 1 frames), L = ``sequence_length`` (8: the actor sees
L frames and L - 1 actions), F = conv feature size (8 * base_depth = 256), Z1 / Z2 = latent sizes (32 / 256),
Z = Z1 + Z2, A = action size, H, W, C = image (channels last, uint8 outside this file), X = actor input size.

The model (paper §6 and Fig. 2 of the NeurIPS version; z^1_t and z^2_t are z1 and z2 here, t starts at 0):

    p(z1_0) = N(0, I)                      q(z1_0 | x_0)
    p(z2_0 | z1_0)                         q(z2_0 | z1_0) = p(z2_0 | z1_0)
    p(z1_t+1 | z2_t, a_t)                  q(z1_t+1 | x_t+1, z2_t, a_t)
    p(z2_t+1 | z1_t+1, z2_t, a_t)          q(z2_t+1 | z1_t+1, z2_t, a_t) = p(z2_t+1 | z1_t+1, z2_t, a_t)
    p(x_t | z1_t, z2_t)  (Gaussian, std sqrt(0.1) on [0, 1] pixels)
    p(r_t | z1_t, z2_t, a_t, z1_t+1, z2_t+1)  (Gaussian, learned std)

Because q and p share the z2 conditionals, the KL of z2 is zero and the ELBO (paper §4, the model objective) is

    ELBO = E_q[ sum_t  log p(x_t | z_t) - KL(q(z1_t | .) || p(z1_t | .)) + sum_t log p(r_t | z_t, a_t, z_t+1) ]

summed over time, averaged over sequences (``ModelDistributionNetwork.compute_loss``). Where ``is_first`` marks an
episode start inside a sequence, the first-step distributions are used again (the TF code's ``reset_masks``);
the reward of a transition that crosses an episode boundary is masked out (its ``reward_valid_mask``).

Actor input (``train_eval.actor_input = 'sequence_action_feature'``): the encoder features of the last L frames and
the L - 1 actions between them, flattened; steps before the latest episode start in the window repeat that start's
frame and have zero actions (``slac_agent.filter_before_first_step``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from smac_rllib.core.elbo import kl_gaussians
from smac_rllib.core.distributions import gaussian_log_prob, tanh_log_det_jacobian
from smac_rllib.models.mlp import mlp

__all__ = [
    "SLACModelConfig",
    "SLACModel",
    "SequenceActor",
    "gaussian_log_lik",
    "gaussian_kl",
    "filter_before_first_step",
    "history_inputs",
    "actor_input_dim",
]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
ACTOR_LOG_STD_MIN, ACTOR_LOG_STD_MAX = -20.0, 2.0  # actor_distribution_network.py:99 (tf.clip_by_value)


# ------------------------------------------------------------------------------------------------ pure math
def gaussian_kl(
    post_mean: torch.Tensor, post_std: torch.Tensor, prior_mean: torch.Tensor, prior_std: torch.Tensor
) -> torch.Tensor:
    """KL(N(post) || N(prior)) of diagonal Gaussians summed over the last dim (the ELBO's KL; TF ``kl_analytic``)."""
    return kl_gaussians(post_mean, post_std, prior_mean, prior_std)


def gaussian_log_lik(
    x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor | float, event_dims: int = 0
) -> torch.Tensor:
    """log N(x | mean, std^2) elementwise, summed over the last ``event_dims`` dims (3 for an image: H, W, C)."""
    std = torch.as_tensor(std, dtype=mean.dtype, device=mean.device)
    log_lik = -0.5 * ((x - mean) / std).square() - std.log() - _HALF_LOG_2PI
    return log_lik.sum(dim=tuple(range(-event_dims, 0))) if event_dims else log_lik


def filter_before_first_step(feat_B_W_F: torch.Tensor, action_B_W_A: torch.Tensor, is_first_B_W: torch.Tensor):
    """TF ``filter_before_first_step``: in each window, every step before the latest ``is_first`` takes that step's
    features and a zero action (the history never mixes two episodes). Returns (features, actions), same shapes."""
    W = feat_B_W_F.shape[1]
    t_W = torch.arange(W, device=feat_B_W_F.device)
    first_B = (is_first_B_W.bool().long() * t_W).max(dim=1).values  # latest episode start in the window (0 if none)
    src_B_W = torch.maximum(t_W.expand(len(first_B), W), first_B[:, None])
    feat = torch.gather(feat_B_W_F, 1, src_B_W[..., None].expand_as(feat_B_W_F))
    action = action_B_W_A * (t_W[None, :] >= first_B[:, None]).unsqueeze(-1).to(action_B_W_A.dtype)
    return feat, action


def history_inputs(feat_B_L_F: torch.Tensor, action_B_L_A: torch.Tensor, is_first_B_L: torch.Tensor) -> torch.Tensor:
    """Actor input of a window of L steps: flatten(filtered features of the L frames) || flatten(the first L - 1
    filtered actions), (B, L*F + (L-1)*A) (``ActorSequencePolicy._apply_actor_network``; port
    ``create_feature_actions``)."""
    feat_B_L_F, action_B_L_A = filter_before_first_step(feat_B_L_F, action_B_L_A, is_first_B_L)
    return torch.cat([feat_B_L_F.flatten(1), action_B_L_A[:, :-1].flatten(1)], dim=-1)


def actor_input_dim(sequence_length: int, feature_dim: int, action_dim: int) -> int:
    return sequence_length * feature_dim + (sequence_length - 1) * action_dim


def _init(module: nn.Module) -> None:
    """Glorot-uniform weights, zero biases: Keras' defaults in the TF code (the port: ``initialize_weight``)."""
    if isinstance(module, (nn.Linear, nn.Conv2d, nn.ConvTranspose2d)):
        nn.init.xavier_uniform_(module.weight)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


# ------------------------------------------------------------------------------------------------ networks
class GaussianMLP(nn.Module):
    """x -> N(mean, std): 2 LeakyReLU(0.2) layers, std = softplus + 1e-5 (``MultivariateNormalDiag`` / ``Normal``)."""

    def __init__(self, in_dim: int, out_dim: int, hidden_dim: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden_dim),
            nn.LeakyReLU(0.2),
            nn.Linear(hidden_dim, hidden_dim),
            nn.LeakyReLU(0.2),
            nn.Linear(hidden_dim, 2 * out_dim),
        )

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, raw_std = self.net(torch.cat(inputs, dim=-1)).chunk(2, dim=-1)
        return mean, F.softplus(raw_std) + 1e-5


class Encoder(nn.Module):
    """``Compressor``: 5 convs, LeakyReLU(0.2): (*lead, S, S, 3) uint8 -> (*lead, F), F = 8 * base_depth.

    Channels d, 2d, 4d, 8d (stride 2) then 8d with a kernel covering the remaining S/16 x S/16 map (4 at 64x64).
    """

    def __init__(self, base_depth: int = 32, image_size: int = 64):
        super().__init__()
        d, k = base_depth, image_size // 16
        self.feature_dim = 8 * d
        self.net = nn.Sequential(
            nn.Conv2d(3, d, 5, 2, 2),
            nn.LeakyReLU(0.2),
            nn.Conv2d(d, 2 * d, 3, 2, 1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(2 * d, 4 * d, 3, 2, 1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(4 * d, 8 * d, 3, 2, 1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(8 * d, 8 * d, k),
            nn.LeakyReLU(0.2),
        )

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        lead = image.shape[:-3]
        x_N_C_H_W = image.reshape(-1, *image.shape[-3:]).permute(0, 3, 1, 2)
        if x_N_C_H_W.dtype == torch.uint8:
            x_N_C_H_W = x_N_C_H_W.float() / 255.0  # tf.image.convert_image_dtype: [0, 1]
        return self.net(x_N_C_H_W).reshape(*lead, self.feature_dim)


class Decoder(nn.Module):
    """``Decoder``: (*lead, Z) -> image mean (*lead, S, S, 3) in the [0, 1] scale; LeakyReLU(0.2) after every layer,
    the last included (as the TF code and the port)."""

    def __init__(self, latent_dim: int, base_depth: int = 32, image_size: int = 64):
        super().__init__()
        d, k = base_depth, image_size // 16
        self.net = nn.Sequential(
            nn.ConvTranspose2d(latent_dim, 8 * d, k),
            nn.LeakyReLU(0.2),
            nn.ConvTranspose2d(8 * d, 4 * d, 3, 2, 1, 1),
            nn.LeakyReLU(0.2),
            nn.ConvTranspose2d(4 * d, 2 * d, 3, 2, 1, 1),
            nn.LeakyReLU(0.2),
            nn.ConvTranspose2d(2 * d, d, 3, 2, 1, 1),
            nn.LeakyReLU(0.2),
            nn.ConvTranspose2d(d, 3, 5, 2, 2, 1),
            nn.LeakyReLU(0.2),
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        lead = z.shape[:-1]
        x_N_C_H_W = self.net(z.reshape(-1, z.shape[-1], 1, 1))
        return x_N_C_H_W.permute(0, 2, 3, 1).reshape(*lead, *x_N_C_H_W.shape[2:], 3)


@dataclass(frozen=True)
class SLACModelConfig:
    base_depth: int = 32  # slac.gin ModelDistributionNetwork.base_depth
    latent1_size: int = 32  # slac.gin latent1_size
    latent2_size: int = 256  # slac.gin latent2_size
    decoder_std: float = math.sqrt(0.1)  # ModelDistributionNetwork decoder_stddev
    image_size: int = 64


@dataclass
class Posterior:
    """Posterior samples and z1's posterior parameters along sequences, (B, T, .) each."""

    z1_mean: torch.Tensor
    z1_std: torch.Tensor
    z1: torch.Tensor
    z2: torch.Tensor

    @property
    def z(self) -> torch.Tensor:  # (B, T, Z): the critic's latent state
        return torch.cat([self.z1, self.z2], dim=-1)

    def detach(self) -> "Posterior":
        return Posterior(*(t.detach() for t in (self.z1_mean, self.z1_std, self.z1, self.z2)))


class SLACModel(nn.Module):
    """The sequential latent variable model: encoder, z1/z2 prior and posterior conditionals, decoder, reward model."""

    def __init__(self, action_dim: int, config: SLACModelConfig = SLACModelConfig()):
        super().__init__()
        self.config = config
        z1, z2, hidden = config.latent1_size, config.latent2_size, 8 * config.base_depth
        self.latent1_size, self.latent2_size = z1, z2
        self.encoder = Encoder(config.base_depth, config.image_size)  # feat_t = Compressor(x_t)
        self.feature_dim = self.encoder.feature_dim
        self.z2_first = GaussianMLP(z1, z2, hidden)  # p(z2_0 | z1_0) = q(z2_0 | z1_0)
        self.z1_prior = GaussianMLP(z2 + action_dim, z1, hidden)  # p(z1_t+1 | z2_t, a_t)
        self.z2_next = GaussianMLP(z1 + z2 + action_dim, z2, hidden)  # p(z2_t+1 | z1_t+1, z2_t, a_t) = q(...)
        self.z1_first_posterior = GaussianMLP(self.feature_dim, z1, hidden)  # q(z1_0 | x_0)
        self.z1_posterior = GaussianMLP(self.feature_dim + z2 + action_dim, z1, hidden)  # q(z1_t+1 | x_t+1, z2_t, a_t)
        self.reward = GaussianMLP(2 * (z1 + z2) + action_dim, 1, hidden)  # p(r_t | z_t, a_t, z_t+1)
        self.decoder = Decoder(z1 + z2, config.base_depth, config.image_size)  # p(x_t | z1_t, z2_t)
        self.apply(_init)

    # the modules an acting copy does not need (it only encodes frames for the actor)
    NON_ACTING = ("z2_first", "z1_prior", "z2_next", "z1_first_posterior", "z1_posterior", "reward", "decoder")

    @staticmethod
    def _sample(mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
        return mean + std * torch.randn_like(std)

    def posterior(self, feat_B_T_F: torch.Tensor, action_B_T_A: torch.Tensor, is_first_B_T: torch.Tensor) -> Posterior:
        """Filter q(z_t | x_0:t, a_0:t-1) along each sequence (``sample_posterior``); restart where ``is_first``.

        ``action_B_T_A[:, t]`` is the action taken at step t (only t < T - 1 are used)."""
        T = feat_B_T_F.shape[1]
        reset_B_T_1 = is_first_B_T.bool().clone().unsqueeze(-1)
        reset_B_T_1[:, 0] = True  # the first step of every row uses the first-step distributions
        means, stds, z1s, z2s = [], [], [], []
        z2 = None
        for t in range(T):
            mean, std = self.z1_first_posterior(feat_B_T_F[:, t])  # q(z1_0 | x_0)
            if t > 0:
                mean_n, std_n = self.z1_posterior(
                    feat_B_T_F[:, t], z2, action_B_T_A[:, t - 1]
                )  # q(z1_t | x_t, z2_t-1, a_t-1)
                mean, std = torch.where(reset_B_T_1[:, t], mean, mean_n), torch.where(reset_B_T_1[:, t], std, std_n)
            z1 = self._sample(mean, std)
            mean2, std2 = self.z2_first(z1)  # q(z2_0 | z1_0) = p(z2_0 | z1_0)
            if t > 0:
                mean2_n, std2_n = self.z2_next(z1, z2, action_B_T_A[:, t - 1])  # q(z2_t | z1_t, z2_t-1, a_t-1) = p(...)
                mean2, std2 = (
                    torch.where(reset_B_T_1[:, t], mean2, mean2_n),
                    torch.where(reset_B_T_1[:, t], std2, std2_n),
                )
            z2 = self._sample(mean2, std2)
            means.append(mean), stds.append(std), z1s.append(z1), z2s.append(z2)
        return Posterior(*(torch.stack(x, dim=1) for x in (means, stds, z1s, z2s)))

    def z1_prior_params(self, post: Posterior, action_B_T_A: torch.Tensor, is_first_B_T: torch.Tensor):
        """p(z1_t | z2_t-1, a_t-1) at the posterior samples, N(0, I) at t = 0 and where ``is_first``: (B, T, Z1) x 2."""
        mean_n, std_n = self.z1_prior(post.z2[:, :-1], action_B_T_A[:, :-1])  # for t = 1..T-1
        zeros = torch.zeros_like(post.z1_mean[:, :1])
        mean, std = torch.cat([zeros, mean_n], dim=1), torch.cat([torch.ones_like(zeros), std_n], dim=1)
        reset_B_T_1 = is_first_B_T.bool().clone().unsqueeze(-1)
        reset_B_T_1[:, 0] = True
        return torch.where(reset_B_T_1, torch.zeros_like(mean), mean), torch.where(
            reset_B_T_1, torch.ones_like(std), std
        )

    def loss(
        self,
        obs_B_T_H_W_C: torch.Tensor,
        action_B_T_A: torch.Tensor,
        reward_B_T: torch.Tensor,
        is_first_B_T: torch.Tensor,
        *,
        feat_B_T_F: torch.Tensor | None = None,
        post: Posterior | None = None,
    ):
        """Negative ELBO (paper §4), summed over time and averaged over sequences (``compute_loss``).

        Our replay's convention (docs/design.md §2): ``reward_B_T[:, t + 1]`` is the reward of the transition
        (x_t, a_t) -> x_t+1, which is invalid where ``is_first[:, t + 1]``. Returns (loss, metrics, posterior).
        """
        if feat_B_T_F is None:
            feat_B_T_F = self.encoder(obs_B_T_H_W_C)
        if post is None:
            post = self.posterior(feat_B_T_F, action_B_T_A, is_first_B_T)
        prior_mean, prior_std = self.z1_prior_params(post, action_B_T_A, is_first_B_T)
        kl_B_T = gaussian_kl(post.z1_mean, post.z1_std, prior_mean, prior_std)  # KL of z1 only (z2: q = p)
        image_B_T_H_W_C = obs_B_T_H_W_C.float() / 255.0 if obs_B_T_H_W_C.dtype == torch.uint8 else obs_B_T_H_W_C
        image_mean = self.decoder(post.z)
        image_log_lik_B_T = gaussian_log_lik(image_B_T_H_W_C, image_mean, self.config.decoder_std, event_dims=3)
        z = post.z
        reward_mean, reward_std = self.reward(z[:, :-1], action_B_T_A[:, :-1], z[:, 1:])  # p(r_t | z_t, a_t, z_t+1)
        valid_B_Tm1 = (~is_first_B_T[:, 1:].bool()).to(reward_mean.dtype)
        reward_log_lik_B_Tm1 = (
            gaussian_log_lik(reward_B_T[:, 1:], reward_mean.squeeze(-1), reward_std.squeeze(-1)) * valid_B_Tm1
        )
        elbo_B = image_log_lik_B_T.sum(1) - kl_B_T.sum(1) + reward_log_lik_B_Tm1.sum(1)
        loss = -elbo_B.mean()
        with torch.no_grad():
            metrics = {
                "model/loss": loss.detach(),
                "model/kl_z1": kl_B_T.sum(1).mean(),
                "model/image_log_lik": image_log_lik_B_T.sum(1).mean(),
                "model/reconstruction_error": (image_B_T_H_W_C - image_mean).square().sum((-3, -2, -1)).sum(1).mean(),
                "model/reward_log_lik": reward_log_lik_B_Tm1.sum(1).mean(),
                "model/reward_error": (((reward_B_T[:, 1:] - reward_mean.squeeze(-1)) ** 2) * valid_B_Tm1)
                .sum(1)
                .mean(),
            }
        return loss, metrics, post


class SequenceActor(nn.Module):
    """pi(a | x_t-L+1:t, a_t-L+1:t-1): MLP (256, 256, ReLU) on the history features, tanh-Gaussian with log-std
    clipped to [-20, 2] (``ActorDistributionNetwork``; port ``GaussianPolicy``)."""

    def __init__(self, input_dim: int, action_dim: int, hidden_dim: int = 256, num_hidden_layers: int = 2):
        super().__init__()
        self.action_dim = action_dim
        self.net = mlp(input_dim, hidden_dim, 2 * action_dim, num_hidden_layers, nn.ReLU)
        self.net.apply(_init)

    def params(self, input_B_X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = self.net(input_B_X).chunk(2, dim=-1)
        return mean, log_std.clamp(ACTOR_LOG_STD_MIN, ACTOR_LOG_STD_MAX)

    def sample(self, input_B_X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(a, log pi(a|h)) with a = tanh(u), u ~ N(mean, std), reparameterized."""
        mean, log_std = self.params(input_B_X)
        u = mean + log_std.exp() * torch.randn_like(mean)
        return torch.tanh(u), gaussian_log_prob(u, mean, log_std) - tanh_log_det_jacobian(u)

    def mean_action(self, input_B_X: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.params(input_B_X)[0])
