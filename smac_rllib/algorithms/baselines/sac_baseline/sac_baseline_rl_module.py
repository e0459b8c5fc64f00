"""The SAC baseline's RLModule: RLlib's SAC module with pytorch_sac's critic Q = MLP(x || a) (``SACBaselineCatalog``)
and a deterministic action squash(mean) (``SquashedGaussianTanhMean``); sac_baseline.py says why."""

from __future__ import annotations

import torch
from ray.rllib.algorithms.sac.sac_catalog import SACCatalog
from ray.rllib.algorithms.sac.torch.default_sac_torch_rl_module import DefaultSACTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.torch.torch_distribution import TorchDeterministic, TorchSquashedGaussian
from ray.rllib.core.models.base import ENCODER_OUT
from ray.rllib.core.models.configs import MLPEncoderConfig
from ray.rllib.core.models.torch.encoder import TorchMLPEncoder


class ConcatObsActionMLPEncoder(TorchMLPEncoder):
    """Q's encoder as in pytorch_sac: one MLP on the concatenated [x, a] (B, |X| + |A|) -> (B, hidden)."""

    def _forward(self, inputs: dict, **kwargs) -> dict:
        return {ENCODER_OUT: self.net(torch.cat([inputs[Columns.OBS], inputs[Columns.ACTIONS]], dim=-1))}


class SACBaselineCatalog(SACCatalog):
    """SAC's catalog with a plain MLP(x || a) critic (fcnet_hiddens, ReLU) instead of RLlib's two-stream fusion net."""

    def _build_qf_encoder_continuous(self, framework: str):
        if len(self.observation_space.shape) != 1:
            raise ValueError(
                f"the SAC baseline needs flat state observations, got shape {self.observation_space.shape}"
            )
        hiddens = self._model_config_dict["fcnet_hiddens"]
        self.qf_encoder_config = MLPEncoderConfig(
            input_dims=(self.observation_space.shape[0] + self.action_space.shape[0],),
            hidden_layer_dims=hiddens[:-1],
            hidden_layer_activation=self._model_config_dict["fcnet_activation"],
            output_layer_dim=hiddens[-1],
            output_layer_activation=self._model_config_dict["fcnet_activation"],
        )
        return ConcatObsActionMLPEncoder(self.qf_encoder_config)


class SquashedGaussianTanhMean(TorchSquashedGaussian):
    """RLlib's squashed Gaussian whose deterministic action is squash(mean), inside the action bounds."""

    def to_deterministic(self) -> TorchDeterministic:
        return TorchDeterministic(loc=self._squash(self.loc))


class SACBaselineTorchRLModule(DefaultSACTorchRLModule):
    """RLlib's SAC module with ``SquashedGaussianTanhMean`` as its action distribution (continuous actions)."""

    def setup(self):
        super().setup()
        if self.action_dist_cls is TorchSquashedGaussian:
            self.action_dist_cls = SquashedGaussianTanhMean
