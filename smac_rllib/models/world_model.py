"""The SMAC world model (Alg. 2, pixels): conv encoder + RSSM + conv decoder + reward head, trained by Eq. (13).

Legend for shape suffixes: B = batch, T = time, A = action dim, E = embed dim, F = feature dim (stoch + deter),
H, W, C = 64, 64, 3.

Data conventions (Dreamer v1), for a replayed sequence t = 0..T-1:
* ``obs_B_T_H_W_C[:, t]``       uint8 frame x_t;
* ``prev_action_B_T_A[:, t]``   a_{t-1}, the action taken BEFORE x_t (zero at episode start);
* ``reward_B_T[:, t]``          r_t, the reward received for the transition INTO x_t (predicted from feat_t);
* ``is_first_B_T[:, t]``        x_t starts an episode (the RSSM resets its state and action there).
"""

from __future__ import annotations

import dataclasses
import typing

import torch
from torch import nn

from smac_rllib.core import elbo
from smac_rllib.models.conv import ConvDecoder, ConvEncoder, preprocess_image
from smac_rllib.models.rssm import RSSM, State

__all__ = ["WorldModelConfig", "WorldModel", "WorldModelOutputs"]


@dataclasses.dataclass
class WorldModelConfig:
    """World-model sizes and ELBO settings. Images are always 64x64x3; smaller presets shrink widths."""

    cnn_depth: int = 32  # conv channel multiplier d: encoder d*(1,2,4,8), embed 32*d   # reference: cnn_depth
    deter_size: int = 200  # GRU state size                                             # reference: deter_size
    stoch_size: int = 30  # Gaussian stochastic state size                             # reference: stoch_size
    rssm_hidden: int = 200  # RSSM MLP / GRU-input width (reference: hidden=deter_size, not num_units)
    min_std: float = 0.1  # std = softplus(x) + min_std for prior and posterior        # reference: rssm_std
    reward_layers: int = 2  # hidden layers of the reward head (ELU)
    reward_units: int = 300  # width of the reward head                                 # reference: num_units
    free_nats: float = 3.0  # KL is clipped from below at this mean value (Dreamer v1)  # reference: free_nats
    kl_scale: float = 1.0  # weight of the clipped KL in Eq. (13)                      # reference: kl_scale

    # ``"paper"`` (reference sizes, ~5.2M params), ``"small"`` (CPU runs), ``"tiny"`` (unit tests)
    PRESETS: typing.ClassVar[dict[str, dict]] = {
        "paper": dict(),
        "small": dict(cnn_depth=16, deter_size=100, stoch_size=16, rssm_hidden=100, reward_units=100),
        "tiny": dict(cnn_depth=4, deter_size=32, stoch_size=8, rssm_hidden=32, reward_units=32),
    }

    @classmethod
    def preset(cls, name: str, **overrides) -> WorldModelConfig:
        """One of ``PRESETS``, with ``overrides``."""
        if name not in cls.PRESETS:
            raise ValueError(f"unknown world-model preset {name!r}; choose one of {sorted(cls.PRESETS)}")
        return cls(**{**cls.PRESETS[name], **overrides})


@dataclasses.dataclass
class WorldModelOutputs:
    """What the actor/critic need from a world-model pass; all (B, T, ...), still attached to the graph."""

    post: State  # posterior states q(s_t | h_t), keys mean, std, stoch, deter
    prior: State  # prior p(s_t | s_{t-1}, a_{t-1}): mean, std, deter (no sample: nothing uses one)
    embed_B_T_E: torch.Tensor  # conv embeddings (input of ``rssm.observe_particles``)
    feat_B_T_F: torch.Tensor  # get_feat(post)


def _mlp(in_dim: int, units: int, layers: int, out_dim: int) -> nn.Sequential:
    modules = []
    for _ in range(layers):
        modules += [nn.Linear(in_dim, units), nn.ELU()]
        in_dim = units
    return nn.Sequential(*modules, nn.Linear(in_dim, out_dim))


class WorldModel(nn.Module):
    def __init__(self, action_dim: int, config: WorldModelConfig | None = None):
        super().__init__()
        self.config = c = config or WorldModelConfig()
        self.encoder = ConvEncoder(c.cnn_depth)
        self.rssm = RSSM(action_dim, self.encoder.embed_dim, c.deter_size, c.stoch_size, c.rssm_hidden, c.min_std)
        self.feat_dim = self.rssm.feat_dim
        self.decoder = ConvDecoder(self.feat_dim, c.cnn_depth)
        self.reward_head = _mlp(self.feat_dim, c.reward_units, c.reward_layers, 1)

    def predict_reward(self, feat: torch.Tensor) -> torch.Tensor:
        """Mean of the unit-variance Gaussian reward: (*batch, F) -> (*batch)."""
        return self.reward_head(feat).squeeze(-1)

    def embed(self, obs_B_T_H_W_C: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(normalized image, conv embeddings): the encoder pass over every frame."""
        image_B_T_H_W_C = preprocess_image(obs_B_T_H_W_C, self.decoder.fc.weight.device)
        return image_B_T_H_W_C, self.encoder(image_B_T_H_W_C)

    def loss(
        self,
        obs_B_T_H_W_C: torch.Tensor,
        prev_action_B_T_A: torch.Tensor,
        reward_B_T: torch.Tensor,
        is_first_B_T: torch.Tensor,
        noise_B_T_S: torch.Tensor | None = None,
        image_and_embed: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor], WorldModelOutputs]:
        """Negative ELBO, Eq. (13), on a replayed sequence batch (conventions in the module docstring).
        ``noise_B_T_S``: the posterior's standard normal draws (default: drawn by the RSSM); ``image_and_embed``:
        ``embed(obs)`` when the caller needed the embeddings first (the particle stream,
        smac_rllib/objectives/pixel_update.py).

        Returns (loss scalar, metrics of detached scalars prefixed ``world_model/``, outputs). Detach
        ``outputs`` before the actor/critic use them (Alg. 2: the world model is trained by Eq. (13) only).
        """
        image_B_T_H_W_C, embed_B_T_E = image_and_embed if image_and_embed is not None else self.embed(obs_B_T_H_W_C)
        device = image_B_T_H_W_C.device
        post, prior = self.rssm.observe(
            embed_B_T_E, prev_action_B_T_A.to(device), is_first_B_T.to(device), noise_B_T_S=noise_B_T_S
        )
        feat_B_T_F = self.rssm.get_feat(post)

        image_ll_B_T = elbo.gaussian_image_log_lik(self.decoder(feat_B_T_F), image_B_T_H_W_C)
        reward_ll_B_T = elbo.reward_log_lik(self.predict_reward(feat_B_T_F), reward_B_T.to(device))
        kl_B_T = elbo.kl_gaussians(post["mean"], post["std"], prior["mean"], prior["std"])
        loss = elbo.world_model_elbo_loss(  # Eq. (13)
            image_ll_B_T, reward_ll_B_T, kl_B_T, free_nats=self.config.free_nats, kl_scale=self.config.kl_scale
        )

        with torch.no_grad():
            metrics = {
                "world_model/loss": loss.detach(),
                "world_model/image_nll": -image_ll_B_T.mean(),
                "world_model/reward_nll": -reward_ll_B_T.mean(),
                "world_model/kl": kl_B_T.mean(),
                "world_model/prior_entropy": elbo.gaussian_entropy(prior["std"]).mean(),
                "world_model/post_entropy": elbo.gaussian_entropy(post["std"]).mean(),
            }
        return loss, metrics, WorldModelOutputs(post, prior, embed_B_T_E, feat_B_T_F)
