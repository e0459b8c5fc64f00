"""RLModule of the Dreamer baseline: pixel SMAC's world model, actor and acting (belief filter, a ~ pi + noise), with
a value network v(s) (reference ``DenseDecoder``, 3 x 300 ELU, ``visual_control/dreamer.py:47``) instead of the twin
critics, the temperature and the target critics. Training:
``smac_rllib.objectives.imagination.dreamer_forward_train``."""

from __future__ import annotations

from typing import Any

from torch import nn

from smac_rllib.objectives import imagination
from smac_rllib.algorithms.smac.pixel_rl_module import SMACPixelTorchRLModule
from smac_rllib.models.mlp import mlp
from smac_rllib.training.checkpoint_names import retired_twins


class DreamerPixelTorchRLModule(SMACPixelTorchRLModule):
    def setup(self):
        super().setup()
        cfg = self.model_config
        if not self.inference_only:
            del self.qf, self.log_alpha  # pixel SMAC's critic and temperature: not Dreamer's
            self.value = mlp(self.world_model.feat_dim, int(cfg["pixel_hidden_dim"]), 1, 3, nn.ELU)  # v(s)

    def get_non_inference_attributes(self) -> list[str]:
        return ["world_model.decoder", "world_model.reward_head", "value"]

    def make_target_networks(self) -> None:
        pass  # Dreamer has no target network

    def get_target_network_pairs(self):
        return []

    def _forward_train(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        cfg = self.model_config
        return imagination.dreamer_forward_train(
            batch,
            world_model=self.world_model,
            actor=self.actor,
            value=self.value,
            horizon=int(cfg["imagine_horizon"]),
            discount=float(cfg["gamma"]),
            lam=float(cfg["return_lambda"]),
            autocast_setting=self.settings.autocast,
            device=next(self.value.parameters()).device,
        )


__getattr__ = retired_twins(globals())  # checkpoints written with fast_update: false name "...RLlibPath" classes
