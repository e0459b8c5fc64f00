"""Learner of the Dreamer baseline: three Adams (world model 6e-4, value 8e-5, actor 8e-5; reference
``visual_control/dreamer.py:58-63``), one backward of model + value + actor losses, each optimizer's gradients clipped
to global norm 100 (``dreamer.py:146-151``); pixel SMAC's learner otherwise (non-finite skip on the device, replay
shard and update thread, device metrics)."""

from __future__ import annotations

import torch

from smac_rllib.algorithms.smac.smac_learner import SMACPixelTorchLearner
from smac_rllib.objectives.imagination import ACTOR_LOSS, DREAMER_METRICS, VALUE_LOSS
from smac_rllib.objectives.pixel_update import WM_LOSS, WM_METRICS
from smac_rllib.training.fast_update.switch import rllib_path


class DreamerTorchLearner(SMACPixelTorchLearner):
    """The reference's Dreamer on pixel SMAC's learner: the speed layer (lean update, device-side non-finite skip)
    as pixel SMAC's; the captured update is off (it captures pixel SMAC's ``PixelUpdate.step``, not Dreamer's)."""

    def build(self) -> None:
        super().build()
        self._capture_mode = "off"  # RLlib's update path (the captured update is pixel SMAC's)

    def optimizer_groups(self, module, config) -> list[tuple[str, list, float]]:
        return [
            ("world_model", self.get_parameters(module.world_model), config.world_model_lr),
            ("value", self.get_parameters(module.value), config.value_lr),
            ("actor", self.get_parameters(module.actor), config.actor_lr),
        ]

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out) -> torch.Tensor:
        self.device_metrics.log_dict(dict(fwd_out[WM_METRICS]) | fwd_out[DREAMER_METRICS], key=module_id)
        return fwd_out[WM_LOSS] + fwd_out[VALUE_LOSS] + fwd_out[ACTOR_LOSS]  # one backward (reference dreamer.py:144)


# the speed layer off (fast_update: false): the same learners on RLlib's own update path (training/fast_update/)
DreamerTorchLearnerRLlibPath = rllib_path(DreamerTorchLearner)
