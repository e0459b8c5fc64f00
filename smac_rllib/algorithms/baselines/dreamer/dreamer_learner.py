"""Learner of the Dreamer baseline: three Adams (world model 6e-4, value 8e-5, actor 8e-5; reference
``visual_control/dreamer.py:56-61``), one backward of model + value + actor losses, each optimizer's gradients clipped
to global norm 100 (``dreamer.py:153-160``): ``DreamerTorchLearner.make_update``, run by the learner shell every
algorithm shares (``training/step_learner.py``: replay shard, update thread, device metrics, non-finite skip). Always
eager: the captured update is pixel SMAC's."""

from __future__ import annotations

import torch

from ray.rllib.algorithms.sac.torch.sac_torch_learner import SACTorchLearner

from smac_rllib.objectives.imagination import ACTOR_LOSS, DREAMER_METRICS, VALUE_LOSS
from smac_rllib.objectives.pixel_update import WM_LOSS, WM_METRICS, OptimSettings
from smac_rllib.objectives.update_step import ModuleUpdate
from smac_rllib.training.async_learner import AsyncLearnerMixin
from smac_rllib.training.checkpoint_names import retired_twins
from smac_rllib.training.step_learner import StepLearnerMixin


def dreamer_losses(fwd_out: dict, batch: dict) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """One backward of the three (reference dreamer.py:153): the module's forward already detached what each must not
    train."""
    terms = {"world_model": fwd_out[WM_LOSS], "value": fwd_out[VALUE_LOSS], "actor": fwd_out[ACTOR_LOSS]}
    return terms, dict(fwd_out[WM_METRICS]) | fwd_out[DREAMER_METRICS]


class DreamerTorchLearner(AsyncLearnerMixin, StepLearnerMixin, SACTorchLearner):
    capture_keys = ()  # eager only

    def optimizer_groups(self, module, config) -> list[tuple[str, list, float]]:
        return [
            ("world_model", self.get_parameters(module.world_model), config.world_model_lr),
            ("value", self.get_parameters(module.value), config.value_lr),
            ("actor", self.get_parameters(module.actor), config.actor_lr),
        ]

    def make_update(self, module_id) -> ModuleUpdate:
        clip = OptimSettings.from_config(self.config.get_config_for_module(module_id)).grad_clip
        optimizers = self.module_optimizers(module_id)
        return ModuleUpdate(
            self._module[module_id].unwrapped(),
            optimizers,
            dreamer_losses,
            clip={name: clip for name in optimizers} if clip else None,
        )


__getattr__ = retired_twins(globals())  # checkpoints written with fast_update: false name "...RLlibPath" classes
