"""RLModule of the Dreamer baseline: the belief actor pixel SMAC also uses (world model, actor and acting: belief
filter, a ~ pi + noise; ``algorithms/belief_actor_module.py``) and a value network v(s) (reference ``DenseDecoder``,
3 x 300 ELU, ``visual_control/dreamer.py:47``). Training: ``objectives/imagination.py: dreamer_forward_train``."""

from __future__ import annotations

from typing import Any

from torch import nn

from smac_rllib.algorithms.belief_actor_module import BeliefActorRLModule
from smac_rllib.models.mlp import mlp
from smac_rllib.objectives import imagination
from smac_rllib.training.checkpoint_names import retired_twins


class DreamerPixelTorchRLModule(BeliefActorRLModule):
    def setup(self):
        super().setup()
        if not self.inference_only:
            self.value = mlp(
                self.world_model.feat_dim, int(self.model_config["pixel_hidden_dim"]), 1, 3, nn.ELU
            )  # v(s)

    def get_non_inference_attributes(self) -> list[str]:
        return super().get_non_inference_attributes() + ["value"]

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
            autocast_setting=cfg["autocast"],
            device=next(self.value.parameters()).device,
        )


__getattr__ = retired_twins(globals())  # checkpoints written with fast_update: false name "...RLlibPath" classes
