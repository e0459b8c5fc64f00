"""The one switch of the speed layer: ``fast_update: false`` runs the same learners and modules on RLlib's and torch's own
code paths (docs/design.md §9).

A config picks the class pair by its ``fast_update`` field: ``get_default_learner_class`` returns ``<Learner>`` or
``<Learner>RLlibPath`` (``rllib_update_path``), ``get_default_rl_module_spec`` returns ``<Module>`` or
``<Module>RLlibPath`` (``rllib_module_path``). Both variants are built at module level next to the class they wrap,
so a checkpoint, which names classes by their module path, finds them. The semantics are the same on both paths:
``tests/test_smac_components.py`` and ``tests/test_pixel_update.py`` hold the weights, Adam moments, target critics
and metrics of the two equal.
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.algorithms.dqn.dqn_learner import DQNLearner
from ray.rllib.core.learner.learner import Learner
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger


class RLlibUpdatePath:
    """The speed layer off (``fast_update: false``): put first in a lean learner's bases and the update runs RLlib's own
    methods, with the same semantics (``tests/test_smac_components.py`` holds the two equal): ``Learner.update`` and
    ``postprocess_gradients``, ``TorchLearner.apply_gradients`` (an update the learner found non-finite is skipped, as
    in the lean path), ``DQNLearner.after_gradient_based_update`` (Polyak through the state dicts) and RLlib's own
    ``MetricsLogger``. The captured update needs the fast path (its config refuses ``learner_capture`` without it)."""

    update = Learner.update
    postprocess_gradients = Learner.postprocess_gradients

    @property
    def metrics(self) -> MetricsLogger:
        return self.__dict__["metrics"]

    @metrics.setter
    def metrics(self, logger: MetricsLogger) -> None:
        self.__dict__["metrics"] = logger  # RLlib's logger as it is

    def apply_gradients(self, gradients_dict) -> None:
        if not self._skip_update:
            TorchLearner.apply_gradients(self, gradients_dict)

    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        DQNLearner.after_gradient_based_update(self, timesteps=timesteps)
        self.device_metrics.flush(self.metrics)


def rllib_update_path(learner_class: type) -> type:
    """``learner_class`` with the speed layer off; call it at module level (``<Name>RLlibPath = ...``) so that
    checkpoints, which name the learner class by its module path, find it."""
    return type(f"{learner_class.__name__}RLlibPath", (RLlibUpdatePath, learner_class),
                {"__module__": learner_class.__module__, "__doc__": f"{learner_class.__name__} on RLlib's own update path."})


class PlainTrainMode:
    """The module side of the switch: torch's own ``nn.Module.train`` (every submodule's flag set on each call) in
    place of ``CachedTrainModeMixin``'s. Put first in a module's bases (``rllib_module_path``)."""

    train = torch.nn.Module.train


def rllib_module_path(module_class: type) -> type:
    """``module_class`` with the speed layer off; call it at module level (``<Name>RLlibPath = ...``), as
    ``rllib_update_path``."""
    return type(f"{module_class.__name__}RLlibPath", (PlainTrainMode, module_class),
                {"__module__": module_class.__module__, "__doc__": f"{module_class.__name__} with torch's own train()."})
