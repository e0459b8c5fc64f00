"""SMAC's TorchLearners: shells around one update function each (docs/design.md §9).

- ``SMACTorchLearner`` (states, Alg. 1) runs ``objectives/state_update.py: StateUpdate.step``;
- ``SMACPixelTorchLearner`` (pixels, Alg. 2) runs ``objectives/pixel_update.py: PixelUpdate.step``, eagerly or captured
  in one CUDA graph (``learner_capture``).

Each owns the module and one Adam per component (registered with RLlib: checkpoints, ``get_state``, lr schedules);
``make_update`` builds the step over those very tensors, so nothing is copied. Everything around the call (the
replay batch as tensors, the target-network schedule, metrics, the non-finite stop) is ``StepLearnerMixin``'s.
"""

from __future__ import annotations

from ray.rllib.algorithms.sac.torch.sac_torch_learner import SACTorchLearner

from smac_rllib.objectives import losses, state_update
from smac_rllib.objectives.pixel_update import BATCH_KEYS, OptimSettings, PixelUpdate
from smac_rllib.objectives.state_update import StateUpdate
from smac_rllib.training.async_learner import AsyncLearnerMixin
from smac_rllib.training.checkpoint_names import retired_twins
from smac_rllib.training.step_learner import NonFiniteUpdateError, StepLearnerMixin

__all__ = ["NonFiniteUpdateError", "SMACPixelTorchLearner", "SMACTorchLearner"]


class SMACTorchLearner(AsyncLearnerMixin, StepLearnerMixin, SACTorchLearner):
    def optimizer_groups(self, module, config) -> list[tuple[str, list, float]]:
        """(optimizer name, parameters, learning rate): one Adam per component, each with its own loss term."""
        return state_update.optimizer_groups(module, config)

    def make_update(self, module_id) -> StateUpdate:
        config = self.config.get_config_for_module(module_id)
        return StateUpdate.from_config(
            self._module[module_id].unwrapped(),
            config,
            optimizers=self.module_optimizers(module_id),
            target_entropy=self.target_entropy_value(module_id),
        )


class SMACPixelTorchLearner(SMACTorchLearner):
    """Alg. 2: world model (Eq. 13) + critic on belief features (Eq. 12) + actor over K particles (Eqs. 7, 9).

    ``autocast="fp16"`` (the reference's choice, ``visual_control/smac.py:104``) makes the step keep a
    ``torch.amp.GradScaler``: the loss scaled before the one backward, every optimizer unscaled before clipping, each
    stepping through the scaler (skipped where its gradients overflowed), the scale updated once.
    """

    capture_keys = BATCH_KEYS  # learner_capture: the columns copied into the graph's static inputs

    def optimizer_groups(self, module, config) -> list[tuple[str, list, float]]:
        return [
            ("world_model", self.get_parameters(module.world_model), config.world_model_lr),
            ("critic", self.get_parameters(module.qf), config.critic_lr),
            ("actor", self.get_parameters(module.actor), config.actor_lr),  # pi(a|s) only (Alg. 2)
            ("alpha", [module.log_alpha], config.alpha_lr),
        ]

    def make_update(self, module_id) -> PixelUpdate:
        config = self.config.get_config_for_module(module_id)
        return PixelUpdate.sharing(
            self._module[module_id].unwrapped(),
            self.module_optimizers(module_id),
            objective=losses.ObjectiveSettings.from_config(config),
            target_entropy=self.target_entropy_value(module_id),
            optim=OptimSettings.from_config(config),
        )


__getattr__ = retired_twins(globals())  # checkpoints written with fast_update: false name "...RLlibPath" classes
